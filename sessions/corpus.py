"""Reading a corpus: one function per journal, its parts merged, on every core or a cluster.

Every corpus reader (timing, what-if, metrics, coverage) is a per-journal function
returning a part with `add(other)` and `note_unreadable(unread)`; parts merge, so the
result does not depend on how the journals were split, nor on where they were read.

What a verdict does not cover is named, never dropped: each journal that could not be
read, or was read only up to damage, is a `sessions.journal.Unread` (which journal, and
why in plain words), carried back from the worker processes with the part, and
`verdict()` says how much of the corpus a result stands on.

A corpus is session folders, archives of journals (sessions.archive), or folders of
either. It is walked lazily and handed out in batches with a bounded number in flight,
so memory stays flat however many journals there are.

Where the work runs:
- one process (`workers=1`): the reference, and what tests compare against;
- local worker processes (the default, one a core);
- a Dask cluster (`scheduler="tcp://host:8786"`, or a `distributed.Client`): workers
  must see the corpus at the same paths (a shared filesystem) and have Lull
  installed. A worker lost mid-run has its batch run again elsewhere (Dask's own
  retries); a batch that still fails is counted and named as unreadable, and the
  run goes on.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from .archive import FLOWS, is_archive, members
from .journal import JOURNAL_FILENAME, Unread

Part = TypeVar("Part")


class CorpusError(RuntimeError):
    """The corpus cannot be read where it was asked to be (one line: what and why)."""

BATCH = 48  # session folders a task reads (an archive is a task of its own)
IN_FLIGHT_PER_WORKER = 4  # batches queued ahead of each worker: enough to keep it busy


def session_folders(root: Path) -> Iterable[Path]:
    """A session folder itself, or each session folder directly inside `root`."""
    # exists(), not isfile(): a journal that cannot be read counts as unreadable, not as absent
    if (root / JOURNAL_FILENAME).exists():
        yield root
        return
    for entry in os.scandir(root):  # a generator: ten thousand folders are never listed at once
        if entry.is_dir() and os.path.exists(os.path.join(entry.path, JOURNAL_FILENAME)):
            yield Path(entry.path)


def corpus_units(roots: Iterable[Path]) -> Iterator[Path]:
    """Session folders and archives under `roots` (each root: either, or a folder of them)."""
    for root in roots:
        root = Path(root)
        if is_archive(root) or (root / JOURNAL_FILENAME).exists():
            yield root
            continue
        for entry in os.scandir(root):
            path = Path(entry.path)
            if entry.is_dir() and os.path.exists(os.path.join(entry.path, JOURNAL_FILENAME)):
                yield path
            elif entry.is_file() and is_archive(path):
                yield path


def folders_without_journal(roots: Iterable[Path]) -> list[str]:
    """The folders directly inside a folder of sessions that hold no journal.jsonl (the
    flows an archive corpus keeps apart): not read, since a journal is what a session
    is, but named, because a session whose journal was deleted or never written looks
    just like this."""
    found: list[str] = []
    for root in roots:
        root = Path(root)
        if is_archive(root) or (root / JOURNAL_FILENAME).exists() or not root.is_dir():
            continue
        for entry in os.scandir(root):
            if entry.is_dir() and entry.name != FLOWS and not os.path.exists(os.path.join(entry.path, JOURNAL_FILENAME)):
                found.append(str(Path(entry.path)))
    return sorted(found, key=_in_number_order)


def _batches(units: Iterator[Path]) -> Iterator[list[Path]]:
    batch: list[Path] = []
    for unit in units:
        if is_archive(unit):
            yield [unit]
            continue
        batch.append(unit)
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def read_batch(batch: list[Path], read: Callable[[Any], Any], empty: Callable[[], Any]) -> tuple[Any, int]:
    """One task: every journal of the batch read and merged; (part, journals read)."""
    total, count = empty(), 0
    for unit in batch:
        if is_archive(unit):
            damage: list[Unread] = []
            for member in members(unit, damage):
                total.add(read(member))
                count += 1
            for unread in damage:
                total.note_unreadable(unread)
        else:
            total.add(read(unit))
            count += 1
    return total, count


def map_sessions(roots: Iterable[Path], read: Callable[[Any], Any], total: Part,
                 workers: int | None = None, progress: Callable[[int], None] | None = None,
                 scheduler: Any = None) -> Part:
    """`read` on every journal under `roots`, merged into `total` (returned).

    `read` takes a session folder or an archive member (sessions.journal.JournalBytes)
    and must be picklable (a module-level function or a functools.partial of one).
    """
    task = partial(read_batch, read=read, empty=type(total))
    batches = _batches(corpus_units(roots))
    done = 0

    def merge(part: Any, count: int) -> None:
        nonlocal done
        total.add(part)
        done += count
        if progress:
            progress(done)

    if scheduler is not None:
        _on_dask(scheduler, task, batches, merge, total)
    elif (workers or os.cpu_count() or 1) <= 1:
        for batch in batches:
            merge(*task(batch))
    else:
        _on_processes(workers or os.cpu_count() or 1, task, batches, merge, total)
    if progress:
        progress(done)
    return total


def _on_processes(workers: int, task: Callable, batches: Iterator[list[Path]], merge: Callable, total: Any) -> None:
    """Local worker processes. A worker that dies (killed, out of memory) breaks the pool:
    what it and the others were running is run again in a new pool, once; a batch lost
    twice is named as unreadable, and the run goes on."""
    retry: list[list[Path]] = []
    lost: dict[int, int] = {}  # id of a batch -> times its pool broke under it

    def feed() -> Iterator[list[Path]]:
        while True:
            if retry:
                yield retry.pop()
                continue
            following = next(batches, None)
            if following is None:
                return
            yield following

    while True:
        running: dict[Future, list[Path]] = {}
        pool = ProcessPoolExecutor(workers)
        try:
            for batch in feed():
                try:
                    running[pool.submit(task, batch)] = batch
                except BrokenProcessPool:
                    retry.append(batch)  # never ran: not counted as lost
                    raise
                if len(running) >= workers * IN_FLIGHT_PER_WORKER:
                    finished, _ = wait(running, return_when=FIRST_COMPLETED)
                    for future in finished:
                        merge(*future.result())
                        running.pop(future)
            for future in list(running):
                merge(*future.result())
                running.pop(future)
            return
        except BrokenProcessPool:
            for future, batch in running.items():
                if future.done() and future.exception() is None:
                    merge(*future.result())
                elif lost.get(id(batch), 0) >= 1:
                    for unit in batch:
                        total.note_unreadable(_lost(unit, "its worker process died twice reading it"))
                else:
                    lost[id(batch)] = 1
                    retry.append(batch)
        finally:
            _end_pool(pool)


def _end_pool(pool: ProcessPoolExecutor) -> None:
    """Shut a pool down without waiting on a worker that cannot hear the request.

    An idle worker waits for its next task holding the task queue's lock; one killed
    there leaves the others blocked on that lock for ever, and if the pool has not seen
    the death by then (its result came in first), Python 3.11's shutdown sends them the
    stop message and joins them: a test run hung there. Every result the run keeps has
    been taken by now, so the workers are ended, not asked."""
    workers = list((getattr(pool, "_processes", None) or {}).values())  # gone after shutdown
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        if worker.is_alive():
            worker.kill()
    for worker in workers:
        worker.join(timeout=10)
    # and the pool's own thread, which closes its wake-up pipe as it ends: left running,
    # Python 3.11's exit hook could write to that pipe as it closed ("Bad file
    # descriptor", a traceback under `lull sessions report` on a busy machine)
    if manager is not None and manager.is_alive():
        manager.join(timeout=10)


def _on_dask(scheduler: Any, task: Callable, batches: Iterator[list[Path]], merge: Callable, total: Any) -> None:
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise CorpusError("--scheduler needs Dask: pip install 'lull-console[cluster]'") from None
    if isinstance(scheduler, Client):
        client = scheduler
    else:
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise CorpusError(f"--scheduler {scheduler}: cannot reach a Dask scheduler there "
                              f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
    try:
        limit = max(2, sum(client.nthreads().values()) * IN_FLIGHT_PER_WORKER)
        queue = as_completed()
        sent: dict[str, list[Path]] = {}

        def submit(batch: list[Path]) -> None:
            future = client.submit(task, batch, pure=False)
            sent[future.key] = batch
            queue.add(future)

        for batch in batches:
            submit(batch)
            if queue.count() >= limit:
                break
        for future in queue:
            batch = sent.pop(future.key)
            try:
                merge(*future.result())
            except Exception as exc:  # noqa: BLE001 -- a batch Dask gave up on (its workers kept dying): named
                for unit in batch:
                    total.note_unreadable(_lost(unit, f"lost with its worker ({type(exc).__name__})"))
            future.release()
            following = next(batches, None)
            if following is not None:
                submit(following)
    finally:
        if client is not scheduler:
            client.close()


def _lost(unit: Path, why: str) -> Unread:
    """A unit of a batch that was never read: a session folder is one journal, an
    archive an unknown number."""
    return Unread(str(unit), why, journals=None if is_archive(unit) else 1)


def verdict(sessions: int, left_out: Iterable[Unread], read_in_part: Iterable[Unread] = (),
            also_left_out: int = 0) -> dict[str, Any]:
    """How much of the corpus a verdict stands on: `sessions` counted of `of` journals
    found (`of_at_least`: an archive's rest could not be read, so there may be more),
    and whether that is the whole corpus. `left_out` are journals not counted,
    `read_in_part` ones counted only up to their damage, `also_left_out` journals not
    counted for another reason (of another flow)."""
    left_out, read_in_part = list(left_out), list(read_in_part)
    return {
        "sessions": sessions,
        "of": sessions + also_left_out + sum(u.journals or 0 for u in left_out),
        "of_at_least": any(u.journals is None for u in left_out),
        "whole": not left_out and not read_in_part and not also_left_out,
    }


def named(unread: Iterable[Unread]) -> list[dict[str, Any]]:
    """Journals not wholly read, as --json lists them: in one order however the corpus was split."""
    return [u.to_dict() for u in sorted(unread, key=lambda u: (_in_number_order(u.journal), u.reason))]


def _in_number_order(name: str) -> list:
    """A name's numbers compared as numbers: calls.jsonl.zst#2 before calls.jsonl.zst#10."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name)]


__all__ = ["CorpusError", "corpus_units", "folders_without_journal", "map_sessions", "named", "read_batch", "session_folders", "verdict"]
