"""What is slow to compute and the same every run, kept on disk between runs: sentence
embeddings of a flow's example phrases, and the intent classifier trained on them.

Building the classifier for the shipped flow embeds 523 texts and trains: 3 s on a quiet
2-core machine, 10-15 s on a busy one, longer beside a busy console. From this cache it
takes milliseconds; after an edit to the examples only the new texts are embedded.

Where: `$LULL_CACHE_DIR`, else `$XDG_CACHE_HOME/lull`, else `~/.cache/lull`;
`LULL_CACHE_DIR=off` turns it off. Entries are .npz files named by a digest of what they
were computed from (written whole, then renamed into place). A cache that cannot be read
or written is a miss, never an error: the call goes on and computes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)


def cache_dir() -> Path | None:
    """The cache's folder (not created here), or None when it is turned off."""
    chosen = os.environ.get("LULL_CACHE_DIR")
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "off", "0", "none") else Path(chosen).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lull"


def digest(*parts: object) -> str:
    """A short stable name for what an entry was computed from (JSON-able parts)."""
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def load(name: str) -> dict[str, np.ndarray] | None:
    """The arrays saved under `name`, or None (no cache, no entry, or unreadable)."""
    folder = cache_dir()
    if folder is None:
        return None
    path = folder / f"{name}.npz"
    try:
        with np.load(path, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except FileNotFoundError:
        return None
    except Exception as exc:  # noqa: BLE001 - a damaged entry is a miss; it is written again
        log.info("cache entry %s unreadable (%s): computing again", path, exc)
        return None


def save(name: str, **arrays: np.ndarray) -> None:
    """Keep `arrays` under `name`; a folder that cannot be written is left alone."""
    folder = cache_dir()
    if folder is None:
        return
    tmp = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".npz", dir=folder)
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, **arrays)
        os.replace(tmp, folder / f"{name}.npz")
        tmp = None
    except OSError as exc:
        log.info("cache not written to %s (%s)", folder, exc)
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


# how long a process waits for another that is computing the same entry before it
# computes the entry itself (a process that died releases its lock at once)
BUILD_WAIT_S = 120.0


@contextmanager
def building(name: str | None) -> Iterator[None]:
    """Hold the entry `name`'s build lock while computing it: two processes that need the
    same classifier at once (two consoles on one flow, a test run's workers) train it
    once, the second loading what the first saved. An advisory lock (flock) on a file
    beside the entry, removed once the entry is saved; no cache, no lock support or an
    unwritable folder: no lock."""
    folder = cache_dir()
    try:
        import fcntl
    except ImportError:  # not POSIX: each process computes its own
        fcntl = None
    if name is None or folder is None or fcntl is None:
        yield
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / f".{name}.lock", "a")  # noqa: SIM115 - held across the yield
    except OSError:
        yield
        return
    with handle:
        deadline = time.monotonic() + BUILD_WAIT_S
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() >= deadline:
                    log.info("cache entry %s: still being built elsewhere after %.0f s; building it here", name, BUILD_WAIT_S)
                    break
                time.sleep(0.05)
        try:
            yield
        finally:
            # the entry is there (built here or by the other): its lock file goes, so
            # the cache holds entries only; a racing process at worst builds it again
            if (folder / f"{name}.npz").exists():
                Path(handle.name).unlink(missing_ok=True)
        # the lock itself goes with the file when it closes


class VectorStore:
    """Unit-length sentence vectors of one encoder (named by its `fingerprint`), by text;
    `shipped(fingerprint)`: vectors built with Lull at setup (the caller-act phrasings':
    read-only, never written here)."""

    def __init__(self, fingerprint: str, shipped: Callable[[str], dict[str, np.ndarray]] | None = None) -> None:
        self.name = f"vectors-{digest(fingerprint)}"
        self.fingerprint = fingerprint
        self._shipped = shipped
        self._vectors: dict[str, np.ndarray] | None = None

    def _loaded(self) -> dict[str, np.ndarray]:
        if self._vectors is None:
            data = load(self.name)
            self._vectors = {}
            if data is not None and "texts" in data and "vectors" in data and len(data["texts"]) == len(data["vectors"]):
                self._vectors = {str(t): v for t, v in zip(data["texts"], data["vectors"], strict=True)}
        return self._vectors

    def get(self, texts: list[str]) -> dict[str, np.ndarray]:
        known = self._loaded()
        found = {t: known[t] for t in texts if t in known}
        if self._shipped is not None and len(found) < len(texts):
            shipped = self._shipped(self.fingerprint)
            found.update({t: shipped[t] for t in texts if t not in found and t in shipped})
        return found

    def add(self, vectors: dict[str, np.ndarray]) -> None:
        if not vectors:
            return
        known = self._loaded()
        known.update(vectors)
        texts = list(known)
        save(self.name, texts=np.array(texts, dtype=str), vectors=np.stack([known[t] for t in texts]))
