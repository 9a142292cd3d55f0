"""Reading a corpus: one function per journal, its parts merged, on every core.

Every corpus reader (timing, what-if, metrics) is a per-journal function returning a
part with `add(other)`; parts merge, so the result does not depend on how the folders
were split between processes. The folders are a generator: ten thousand are never
listed at once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, TypeVar


Part = TypeVar("Part")
PROGRESS_EVERY = 200  # journals between progress reports


def session_folders(root: Path) -> Iterable[Path]:
    """A session folder itself, or each session folder directly inside `root`."""
    # exists(), not isfile(): a journal that cannot be read counts as unreadable, not as absent
    if (root / "journal.jsonl").exists():
        yield root
        return
    for entry in os.scandir(root):  # a generator: ten thousand folders are never listed at once
        if entry.is_dir() and os.path.exists(os.path.join(entry.path, "journal.jsonl")):
            yield Path(entry.path)


def corpus_folders(roots: Iterable[Path]) -> Iterable[Path]:
    for root in roots:
        yield from session_folders(Path(root))


def map_sessions(roots: Iterable[Path], read: Callable[[Path], Any], total: Part,
                 workers: int | None = None, progress: Callable[[int], None] | None = None) -> Part:
    """`read` on every session folder under `roots`, merged into `total` (returned).

    `read` must be picklable (a module-level function or a functools.partial of one).
    """
    folders = corpus_folders(roots)
    workers = workers or os.cpu_count() or 1
    done = 0

    def merged(parts: Iterable[Any]) -> None:
        nonlocal done
        for part in parts:
            total.add(part)
            done += 1
            if progress and done % PROGRESS_EVERY == 0:
                progress(done)

    if workers <= 1:
        merged(read(folder) for folder in folders)
    else:
        with ProcessPoolExecutor(workers) as pool:
            merged(pool.map(read, folders, chunksize=32))
    if progress:
        progress(done)
    return total


__all__ = ["corpus_folders", "map_sessions", "session_folders"]
