"""Corpus archives: many journals in one compressed file, the flow stored once beside.

A month of calls as session folders costs a file each and the whole flow in every
header. An archive (`*.jsonl.gz`, or `*.jsonl.zst` with Zstandard) holds journals back
to back, each starting at its header line; its members are read one at a time, never
the whole archive at once. Headers name their flow by hash (`flow_stored`,
`flow_hash`) and the flow and its ladder policy are stored once in `flows/` in the same
folder (`flows/sha256-<hash>.json`); the journal reader puts them back
(sessions.journal), so every reader sees a whole header. Corpus folders may mix session
folders and archives.

A damaged archive (cut short, a bad block) gives up its members up to the damage and
is named: the run goes on, and the verdict says it is on less than the whole corpus.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .journal import JournalBytes, JournalError, Unread, document_hash

SUFFIXES = (".jsonl.gz", ".jsonl.zst")
FLOWS = "flows"
_HEADER_START = b'{"type":"header"'  # how JournalWriter begins every header line


def is_archive(path: Path) -> bool:
    return path.name.endswith(SUFFIXES) and path.is_file()


def stored_flow_name(flow_hash: str) -> str:
    return f"{FLOWS}/{flow_hash.replace(':', '-')}.json"


def _zstd():
    try:
        import zstandard
    except ImportError:  # pragma: no cover - a dependency; said in one line if missing
        raise JournalError("reading or writing .jsonl.zst needs the zstandard package (pip install zstandard)") from None
    return zstandard


def _errors() -> tuple[type[BaseException], ...]:
    errors: tuple[type[BaseException], ...] = (EOFError, OSError, zlib.error)
    try:
        import zstandard
        errors += (zstandard.ZstdError,)
    except ImportError:  # pragma: no cover
        pass
    return errors


def _zstd_lines(path: Path, chunk_size: int = 1 << 20) -> Iterator[bytes]:
    """The lines of a .zst file, frame after frame; an archive that ends inside a frame
    (cut short) raises EOFError, as gzip does: a stream reader would just stop."""
    zstd = _zstd()
    with open(path, "rb") as raw:
        decompressor, fed, pending = zstd.ZstdDecompressor().decompressobj(), False, b""
        while chunk := raw.read(chunk_size):
            while chunk:
                pending += decompressor.decompress(chunk)
                fed = True
                if decompressor.eof:  # a frame ended: what follows is the next frame's
                    chunk, fed = decompressor.unused_data, False
                    decompressor = zstd.ZstdDecompressor().decompressobj()
                else:
                    chunk = b""
            *whole, pending = pending.split(b"\n")
            for line in whole:
                yield line + b"\n"
        if pending:
            yield pending
        if fed:
            raise EOFError("the archive ends inside a compressed frame")


def _lines(path: Path) -> Iterator[bytes]:
    if path.name.endswith(".zst"):
        yield from _zstd_lines(path)
        return
    with gzip.open(path, "rb") as stream:
        yield from stream


def members(path: Path, damage: list[Unread], flows: Path | None = None) -> Iterator[JournalBytes]:
    """Each journal in the archive, in order; what stops the reading is added to `damage`
    (the archive's unread rest: how many journals it held cannot be known)."""
    index, lines = 0, []
    try:
        for line in _lines(path):
            if line.startswith(_HEADER_START) and lines:
                index += 1
                yield JournalBytes(path, index, b"".join(lines), flows)
                lines = []
            lines.append(line)
    except _errors() as exc:
        reached = index + (1 if lines else 0)
        where = f"unreadable after member {reached}" if reached else "unreadable from its start"
        damage.append(Unread(str(path), f"{where}: {_damage_words(exc)}", journals=None))
    if lines:  # the last member; cut short by damage, the journal reader says how
        yield JournalBytes(path, index + 1, b"".join(lines), flows)


def _damage_words(exc: BaseException) -> str:
    """What stopped an archive's reading, in words: cut short, damaged, or not readable."""
    detail = str(exc).splitlines()[0] if str(exc) else ""
    if isinstance(exc, EOFError):
        return f"cut short ({detail})" if detail else "cut short"
    if isinstance(exc, OSError) and exc.strerror:
        return f"cannot be read ({exc.strerror})"
    return f"damaged ({type(exc).__name__}: {detail})" if detail else f"damaged ({type(exc).__name__})"


class ArchiveWriter:
    """Writes journals into a new archive; refuses to overwrite one."""

    def __init__(self, path: Path, level: int | None = None) -> None:
        self.path = path
        self._raw = open(path, "xb")  # never over a recorded corpus
        if path.name.endswith(".zst"):
            self.stream: Any = _zstd().ZstdCompressor(level=level or 6).stream_writer(self._raw, closefd=False)
        elif path.name.endswith(".gz"):
            self.stream = gzip.GzipFile(fileobj=self._raw, mode="wb", compresslevel=level or 6, mtime=0)
        else:
            self._raw.close()
            path.unlink()
            raise ValueError(f"{path}: an archive's name ends {' or '.join(SUFFIXES)}")

    def close(self) -> None:
        self.stream.close()
        self._raw.close()

    def __enter__(self) -> ArchiveWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def store_flow(corpus: Path, header: dict) -> dict:
    """The header with its flow and policy stored once in `corpus/flows/`, named by hash."""
    document = header.get("flow_document")
    if not isinstance(document, dict):
        return header  # a ladder-only session: its policy is small, kept whole
    flow_hash = document_hash(document)
    name = stored_flow_name(flow_hash)
    target = corpus / name
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(f".{os.getpid()}.part")
        partial.write_text(json.dumps({"flow_hash": flow_hash, "flow_document": document,
                                       "ladder_policy": header.get("ladder_policy")}), encoding="utf-8")
        partial.replace(target)  # whole or absent, even with two writers
    slim = {k: v for k, v in header.items() if k not in ("flow_document", "ladder_policy")}
    slim.update(flow_hash=flow_hash, flow_stored=name)
    return slim


__all__ = ["FLOWS", "SUFFIXES", "ArchiveWriter", "is_archive", "members", "store_flow", "stored_flow_name"]
