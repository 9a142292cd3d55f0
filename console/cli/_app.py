"""What every command shares: the app, the two consoles, and the one-line failure."""

from __future__ import annotations

import inspect
import os
import sys
import time
from collections import Counter
from pathlib import Path

import typer
from rich.console import Console
from rich.text import Text

app = typer.Typer(
    name="lull",
    help="Design how a voice agent behaves when the caller goes quiet.",
    no_args_is_help=False,
    add_completion=False,
    rich_markup_mode="rich",
)

# piped output keeps whole rows: tables are for reading and for grep
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160)


def reflow_help(doc: str | None) -> str | None:
    """A command's docstring as --help should print it at any width: prose paragraphs
    joined into one line each (the terminal wraps them), example blocks (indented lines,
    or a line ending in ":" and the indented lines under it) kept line by line, indented.
    Typer keeps a docstring's line breaks as they are, so at 80 columns each source line
    wrapped on its own ("...its last whole" / "step and says...")."""
    if not doc:
        return doc
    out = []
    for paragraph in inspect.cleandoc(doc).split("\n\n"):
        lines = paragraph.splitlines()
        body = lines[1:] if lines and lines[0].rstrip().endswith(":") else lines
        if body and all(line.startswith(" ") for line in body):
            out.append("\n".join(line.rstrip() for line in lines))
        else:
            out.append(" ".join(line.strip() for line in lines))
    return "\n\n".join(out)


def quiet_pipecat_logs() -> None:
    """Pipecat logs every frame processor's start and stop at DEBUG (loguru, to
    stderr): the CLI keeps its warnings and errors only. Call before importing it."""
    try:
        from loguru import logger
    except ImportError:  # no pipecat extra: nothing logs through loguru
        return
    import sys

    logger.remove()
    logger.add(sys.stderr, level="WARNING")


def fail(message: str, code: int = 2) -> None:
    """One clear line and a non-zero exit. The message is never read as console markup:
    it holds file names, journal content and the user's words."""
    err.print(Text.assemble(("error:", "bold red"), " ", message), highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def print_text(*parts: str | tuple[str, str], console: Console | None = None) -> None:
    """Print plain text (strings) and styled text ((text, style) pairs), never as markup:
    user text such as "[/]" or "[redacted]" prints as it is."""
    (console or out).print(Text.assemble(*parts), highlight=False, soft_wrap=True)


def plain(value: object) -> Text:
    """A table cell that shows its text as it is (a str cell would be read as markup)."""
    return Text(str(value))


def check_new_file(option: str, path: Path) -> None:
    """Refuse, before any work, an output file that exists or cannot be created."""
    if path.exists() or path.is_symlink():
        fail(f"{option} {path}: the file exists; choose another name (nothing was overwritten)")
    _check_folder_to_write_into(option, path)


def _check_folder_to_write_into(option: str, path: Path) -> None:
    folder = path.parent
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        fail(f"{option} {path}: the folder {folder} {what}; expected an existing folder to write into")
    if not os.access(folder, os.W_OK | os.X_OK):
        fail(f"{option} {path}: the folder {folder} is not writable")


def write_new_file(option: str, path: Path, data: bytes) -> None:
    """Write a file that must not exist yet ('x': a file that appeared meanwhile is kept)."""
    try:
        with open(path, "xb") as f:
            f.write(data)
    except FileExistsError:
        fail(f"{option} {path}: the file exists; choose another name (nothing was overwritten)")
    except OSError as exc:
        fail(f"{option} {path}: cannot write: {exc.strerror or exc}")


def check_output_file(option: str, path: Path, overwrite: bool) -> None:
    """Refuse, before any work, an output file that cannot be written: one that exists
    (unless `overwrite`), a folder in its place, a folder to write into that is missing
    or not writable."""
    if path.is_dir():
        fail(f"{option} {path}: is a folder; expected a file name")
    if (path.exists() or path.is_symlink()) and not overwrite:
        fail(f"{option} {path}: the file exists; give --force to replace it (nothing was overwritten)")
    _check_folder_to_write_into(option, path)


def write_file_atomically(option: str, path: Path, data: bytes, overwrite: bool) -> None:
    """Write whole or not at all: the data goes to a file of its own beside `path`, then
    takes its name (a reader never sees half a file). Without `overwrite`, a file that
    appeared meanwhile is kept: a hard link, like open's 'x', refuses an existing name."""
    import tempfile

    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        fail(f"{option} {path}: cannot write: {exc.strerror or exc}")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if overwrite:
            os.replace(tmp, path)
        else:
            _link_new(tmp, path, data)
    except FileExistsError:
        fail(f"{option} {path}: the file exists; give --force to replace it (nothing was overwritten)")
    except OSError as exc:
        fail(f"{option} {path}: cannot write: {exc.strerror or exc}")
    finally:
        Path(tmp).unlink(missing_ok=True)


def _link_new(tmp: str, path: Path, data: bytes) -> None:
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError:  # a filesystem without hard links: 'x' still refuses an existing name
        with open(path, "xb") as handle:
            handle.write(data)


def check_record_folder(record: Path, names: list[str], what: str) -> None:
    """Refuse, before any run, a --record folder where a session would clash or fail."""
    twice = [name for name, n in Counter(names).items() if n > 1]
    if twice:
        fail(
            f"--record {record}: {what} {twice[0]!r} is given more than once; each run is "
            f"recorded in {record / twice[0]}, so name each {what} once"
        )
    if record.exists() and not record.is_dir():
        fail(f"--record {record}: is a file; expected a folder for the session folders")
    for name in names:
        folder = record / name
        if folder.exists() and not folder.is_dir():
            fail(f"--record {record}: {folder} is a file; expected a folder for the session")
        if (folder / "journal.jsonl").exists():
            fail(f"--record {record}: {folder}: a recorded session is already there; choose another --record folder (nothing was overwritten)")
    existing = record
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        fail(f"--record {record}: {existing} is a file; expected a folder to record into")
    if not os.access(existing, os.W_OK | os.X_OK):
        fail(f"--record {record}: {existing} is not writable")


class Progress:
    """A one-line count on stderr, rewritten in place, only on a terminal (never in a pipe or CI)."""

    def __init__(self, what: str, total: int | None = None) -> None:
        self.what, self.total = what, total
        self.shown = sys.stderr.isatty()
        self._start = time.monotonic()

    def __call__(self, done: int) -> None:
        if not self.shown:
            return
        elapsed = time.monotonic() - self._start
        of = f"/{self.total}" if self.total else ""
        rate = f", {done / elapsed:,.0f}/s" if elapsed > 0 else ""
        sys.stderr.write(f"\r{self.what}: {done}{of}{rate} ")
        sys.stderr.flush()

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\n")
