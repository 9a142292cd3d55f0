"""Append-only session journal (design rules S1 and S6).

A session is a folder holding ``journal.jsonl``. Line 1 is a header object;
every later line is one record: an ``input`` (an event fed into the
controller) or a ``decision`` (what the controller produced).

Writing: each record is encoded completely, then written with one ``write``
call and flushed, so a process killed at any point leaves a journal that is
readable up to its last whole line. ``t_ms`` is always supplied by the caller
and never read from a clock here, so a session recorded on a virtual clock
replays identically. A ``t_ms`` earlier than the record before it (two clocks
of the caller disagreeing) does not lose the call: the record is written with
``t_ms`` held at the previous value and ``clock_behind_ms`` saying by how much
the supplied time was behind, so the journal's time never goes backwards and a
replay, which uses the journal's time, stays deterministic.

Reading: the header must be valid, otherwise the journal is unusable and
:class:`JournalError` is raised. After the header the reader loses as little
as possible: a bad line (invalid JSON, not an object, missing or mistyped
fields, a repeated or backwards ``seq``, ``t_ms`` going backwards) is skipped
and reported as a :class:`SkippedLine`, and reading continues with the next
line. A caller may pass ``check`` to refuse records whose content it cannot
use (a session's inputs must be ladder events); such a line is skipped and
reported the same way, naming the field. A ``seq`` that jumps forward (records missing, typically because the
line before was corrupt) does not make the intact record carrying it
unusable: that record is loaded and the jump is reported as a
:class:`SeqGap`. A final line without a newline that does not parse is the
tail of an interrupted write ("truncated final line").
"""

from __future__ import annotations

import io
import json
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = [
    "JOURNAL_FILENAME",
    "JOURNAL_SCHEMA",
    "SUPPORTED_SCHEMAS",
    "RECORD_TYPES",
    "JournalError",
    "RecordCheck",
    "SkippedLine",
    "SeqGap",
    "JournalScan",
    "Journal",
    "JournalWriter",
    "JournalBytes",
    "Unread",
    "iter_records",
    "reason_of",
    "read_journal",
]

JOURNAL_FILENAME = "journal.jsonl"
JOURNAL_SCHEMA = 1
SUPPORTED_SCHEMAS: tuple[int, ...] = (1,)
RECORD_TYPES: tuple[str, ...] = ("input", "decision")

# Keys the journal owns; letting callers set them would make a recording lie
# about its own structure or timing.
_HEADER_RESERVED = frozenset({"type", "schema", "created"})
_RECORD_RESERVED = frozenset({"seq", "t_ms", "wall", "type", "clock_behind_ms"})
_REQUIRED_RECORD_FIELDS = ("seq", "t_ms", "type")

_PREVIEW_CHARS = 80
_REPORT_MAX_LISTED = 5

WallClock = Callable[[], datetime]
# Why a record's content is unusable (naming the field), or None: see iter_records.
RecordCheck = Callable[[dict[str, Any]], "str | None"]


class JournalError(ValueError):
    """The journal cannot be used at all (bad or missing header, unknown schema)."""


@dataclass(frozen=True)
class Unread:
    """A journal a corpus verdict does not wholly cover, and why, in plain words.

    What a corpus reader names (sessions.corpus): a journal it could not read, one it
    read only up to damage, or the rest of an archive past damage. `journals` is how
    many journals it stands for: 1, or None for an archive's unread rest, whose number
    cannot be known. Frozen and small: it crosses to and from worker processes.
    """

    journal: str
    reason: str
    journals: int | None = 1

    def to_dict(self) -> dict[str, Any]:
        named: dict[str, Any] = {"journal": self.journal, "reason": self.reason}
        if self.journals is None:
            named["rest_of_archive"] = True  # not one journal: however many the archive held past the damage
        return named

    def __str__(self) -> str:
        return f"{self.journal}: {self.reason}"


def reason_of(exc: BaseException, journal: object) -> str:
    """Why `journal` could not be read, from the error, without the journal's own name
    (the listing gives it beside): "line 1: invalid JSON at column 1; ...", not the path twice."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    for name in (f"{journal}/{JOURNAL_FILENAME}", str(journal)):
        if text.startswith(name):
            return text[len(name):].lstrip(": ") or type(exc).__name__
    return text


@dataclass(frozen=True)
class SkippedLine:
    """A line after the header that was not loaded, and why.

    ``record_type`` is the line's ``type`` ("input" or "decision") when it could be
    read that far, else None. ``position`` is how many records had been loaded
    before it, which places it among the records that were.
    """

    line_no: int
    reason: str
    text_preview: str
    record_type: str | None = None
    position: int = 0
    # an exact copy of the line before it: nothing of the call is lost with it
    harmless: bool = False


@dataclass(frozen=True)
class SeqGap:
    """A loaded record whose seq jumped past ``expected``: records are missing."""

    line_no: int
    expected: int
    found: int
    position: int = 0  # the index, among the loaded records, of the record that jumped

    @property
    def missing(self) -> int:
        return self.found - self.expected

    def describe(self) -> str:
        after = _after(self.expected - 1)
        noun = "record" if self.missing == 1 else "records"
        return f"line {self.line_no} seq {self.found} after {after}: gap ({self.missing} {noun} missing)"


def document_hash(document: Any) -> str:
    """A short, stable name for a flow document's content (the header's `flow_hash`):
    the same flow gives the same hash whatever its key order or whitespace."""
    import hashlib

    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def _default_wall_clock() -> datetime:
    return datetime.now(UTC)


def _iso_utc(dt: Any) -> str:
    if not isinstance(dt, datetime):
        raise TypeError(f"wall_clock must return a datetime, got {type(dt).__name__}")
    if dt.tzinfo is None or dt.utcoffset() is None:
        # A naive time is ambiguous; recordings compared across machines need UTC.
        raise ValueError("wall_clock must return a timezone-aware datetime")
    return dt.astimezone(UTC).isoformat(timespec="microseconds")


def _find_unencodable(value: Any, where: str, active: set[int]) -> str | None:
    """Describe the first part of ``value`` that would not survive a JSON round trip.

    Checked before encoding (not only on failure) because ``json`` silently
    turns non-string dict keys into strings, which can collide and change data.
    """
    if value is None or isinstance(value, (bool, int)):
        return None
    if isinstance(value, str):
        if value.isascii():
            return None
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"key {where!r} holds a string with unpaired surrogates, which UTF-8 cannot store"
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"key {where!r} holds {value!r}, which JSON cannot represent"
    if isinstance(value, (dict, list, tuple)):
        if id(value) in active:
            return f"key {where!r} contains a reference to itself"
        active.add(id(value))
        try:
            if isinstance(value, dict):
                for k, v in value.items():
                    if not isinstance(k, str):
                        return f"key {where!r} has a non-string key {k!r}"
                    problem = _find_unencodable(v, f"{where}.{k}", active)
                    if problem:
                        return problem
            else:
                for i, v in enumerate(value):
                    problem = _find_unencodable(v, f"{where}[{i}]", active)
                    if problem:
                        return problem
        finally:
            active.discard(id(value))
        return None
    return f"key {where!r} holds a {type(value).__name__}, which is not JSON-serialisable"


def _check_encodable(mapping: dict[str, Any], what: str, path: Path) -> None:
    for key, value in mapping.items():
        if not isinstance(key, str):
            raise TypeError(f"{path}: {what} has a non-string key {key!r}; nothing was written")
        problem = _find_unencodable(value, key, set())
        if problem:
            raise TypeError(f"{path}: {what} {problem}; nothing was written")


def _encode_line(obj: dict[str, Any]) -> bytes:
    # allow_nan=False: NaN/Infinity are not JSON and other tools would reject the file.
    return (json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n").encode("utf-8")


def _header_line(header: dict[str, Any], clock: WallClock, path: Any) -> bytes:
    """The header as its encoded line, the journal's own keys first; refused if bad."""
    if not isinstance(header, dict):
        raise TypeError(f"header must be a dict, got {type(header).__name__}")
    clash = sorted(_HEADER_RESERVED & header.keys())
    if clash:
        raise ValueError(f"header keys {clash} are set by the journal and cannot be supplied")
    full_header: dict[str, Any] = {"type": "header", "schema": JOURNAL_SCHEMA, "created": _iso_utc(clock())}
    full_header.update(header)
    _check_encodable(full_header, "header", path)
    return _encode_line(full_header)


class JournalWriter:
    """Writes one session's journal. Create it with :meth:`JournalWriter.create`."""

    def __init__(self, path: Path, file: Any, wall_clock: WallClock, fsync: bool, owns_file: bool = True) -> None:
        # Private: use create() or append_to(), which write the header first.
        self._path = path
        self._file = file
        self._owns_file = owns_file
        self._wall_clock = wall_clock
        self._fsync = fsync
        self._next_seq = 0
        self._last_t_ms: float | None = None

    @classmethod
    def create(
        cls,
        folder: Path,
        header: dict[str, Any],
        *,
        wall_clock: WallClock | None = None,
        fsync: bool = False,
    ) -> JournalWriter:
        """Start a new journal in ``folder`` (created if needed) and write its header.

        Raises FileExistsError if the folder already holds a journal: a
        recording is never overwritten. ``fsync=True`` also survives power
        loss; flushing alone already survives the process being killed.
        """
        folder = Path(folder)
        path = folder / JOURNAL_FILENAME
        clock = wall_clock or _default_wall_clock
        # Validated before touching the disk, so a bad header leaves no empty
        # journal behind that would then block a corrected retry.
        line = _header_line(header, clock, path)

        folder.mkdir(parents=True, exist_ok=True)
        try:
            # "x" makes the existence check and the creation one atomic step.
            file = open(path, "xb")
        except FileExistsError:
            raise FileExistsError(
                f"{path} already exists; refusing to overwrite a recorded session (choose a new folder)"
            ) from None
        writer = cls(path, file, clock, fsync)
        writer._write_line(line)
        return writer

    @classmethod
    def append_to(cls, stream: Any, where: Path, header: dict[str, Any], *,
                  wall_clock: WallClock | None = None) -> JournalWriter:
        """A journal written onto the end of an open binary stream (one member of a
        corpus archive, sessions.archive); closing the writer leaves the stream open."""
        clock = wall_clock or _default_wall_clock
        line = _header_line(header, clock, where)
        writer = cls(where, stream, clock, False, owns_file=False)
        writer._write_line(line)
        return writer

    @property
    def path(self) -> Path:
        """The journal.jsonl file being written."""
        return self._path

    @property
    def records_written(self) -> int:
        return self._next_seq

    @property
    def closed(self) -> bool:
        return self._file is None

    def write_input(self, t_ms: float, payload: dict[str, Any]) -> dict[str, Any]:
        """Record an event fed into the controller; returns the record written."""
        return self._write_record("input", t_ms, payload)

    def write_decision(self, t_ms: float, payload: dict[str, Any]) -> dict[str, Any]:
        """Record what the controller produced; returns the record written."""
        return self._write_record("decision", t_ms, payload)

    def close(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            if self._owns_file:
                file.close()

    def __enter__(self) -> JournalWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _write_record(self, kind: str, t_ms: float, payload: dict[str, Any]) -> dict[str, Any]:
        if self._file is None:
            raise ValueError(f"{self._path}: journal is closed")
        if isinstance(t_ms, bool) or not isinstance(t_ms, (int, float)):
            raise TypeError(f"t_ms must be a number of milliseconds, got {type(t_ms).__name__}")
        if not math.isfinite(t_ms) or t_ms < 0:
            raise ValueError(f"t_ms must be a finite number >= 0, got {t_ms!r}")
        if not isinstance(payload, dict):
            raise TypeError(f"payload must be a dict, got {type(payload).__name__}")
        clash = sorted(_RECORD_RESERVED & payload.keys())
        if clash:
            raise ValueError(f"payload keys {clash} are set by the journal and cannot be supplied")
        _check_encodable(payload, f"{kind} payload", self._path)

        behind_ms: float | None = None
        if self._last_t_ms is not None and t_ms < self._last_t_ms:
            # Refusing would lose the call over a clock disagreement; holding the
            # time keeps the journal ordered and says what the caller's clock said.
            behind_ms = round(self._last_t_ms - t_ms, 6)
            t_ms = self._last_t_ms
        record: dict[str, Any] = {
            "seq": self._next_seq,
            "t_ms": t_ms,
            "wall": _iso_utc(self._wall_clock()),
            "type": kind,
        }
        if behind_ms is not None:
            record["clock_behind_ms"] = behind_ms
        record.update(payload)
        self._write_line(_encode_line(record))
        # Advance only once the line is out, so a failed write does not leave a seq gap.
        self._next_seq += 1
        self._last_t_ms = t_ms
        return record

    def _write_line(self, line: bytes) -> None:
        # One write per whole line, then flush: a kill can cut at most this line.
        self._file.write(line)
        self._file.flush()
        if self._fsync:
            os.fsync(self._file.fileno())


@dataclass
class JournalScan:
    """What a streaming read has seen so far; filled in by :func:`iter_records`."""

    path: Path | None = None
    header: dict[str, Any] | None = None
    loaded: int = 0
    skipped: list[SkippedLine] = field(default_factory=list)
    gaps: list[SeqGap] = field(default_factory=list)
    clock_behind: list[tuple[int, float]] = field(default_factory=list)  # (seq, ms) of held times

    def report(self) -> str:
        return _report(self.path, self.loaded, self.skipped, self.gaps, self.clock_behind)

    def damage(self) -> str | None:
        """What of the journal was lost (lines skipped, records missing), in words, or
        None when nothing was: an exact copy of the line before it loses nothing."""
        lost = [s for s in self.skipped if not s.harmless]
        if not lost and not self.gaps:
            return None
        return "; ".join(_losses(lost, self.gaps))


@dataclass
class Journal:
    """A fully loaded journal."""

    header: dict[str, Any]
    records: list[dict[str, Any]]
    skipped: list[SkippedLine]
    path: Path
    gaps: list[SeqGap] = field(default_factory=list)
    clock_behind: list[tuple[int, float]] = field(default_factory=list)  # (seq, ms) of held times

    @property
    def intact(self) -> bool:
        """True when nothing was skipped and no seq is missing."""
        return not self.skipped and not self.gaps

    def inputs(self) -> Iterator[dict[str, Any]]:
        return (r for r in self.records if r["type"] == "input")

    def decisions(self) -> Iterator[dict[str, Any]]:
        return (r for r in self.records if r["type"] == "decision")

    def report(self) -> str:
        """One-line human summary, e.g. 'call-7/journal.jsonl: 120 records loaded; no lines skipped'."""
        return _report(self.path, len(self.records), self.skipped, self.gaps, self.clock_behind)


def _display_name(path: Path | None) -> str:
    if path is None:
        return JOURNAL_FILENAME
    # Include the session folder: across many sessions every file is journal.jsonl.
    return f"{path.parent.name}/{path.name}" if path.parent.name else path.name


def _report(
    path: Path | None,
    loaded: int,
    skipped: list[SkippedLine],
    gaps: list[SeqGap],
    clock_behind: list[tuple[int, float]] = (),  # type: ignore[assignment]
) -> str:
    parts = [f"{_display_name(path)}: {loaded} record{'' if loaded == 1 else 's'} loaded"]
    parts += _losses(skipped, gaps) if skipped else ["no lines skipped", *_losses([], gaps)]
    if clock_behind:
        worst = max(ms for _, ms in clock_behind)
        noun = "record" if len(clock_behind) == 1 else "records"
        parts.append(
            f"{len(clock_behind)} {noun} held at the previous time because the clock was behind "
            f"(by up to {worst:g} ms; first at seq {clock_behind[0][0]})"
        )
    return "; ".join(parts)


def _losses(skipped: list[SkippedLine], gaps: list[SeqGap]) -> list[str]:
    """The skipped lines and the seq gaps, a phrase each kind (the first few listed)."""
    parts = []
    if skipped:
        listed = ", ".join(f"line {s.line_no} {s.reason}" for s in skipped[:_REPORT_MAX_LISTED])
        more = f", and {len(skipped) - _REPORT_MAX_LISTED} more" if len(skipped) > _REPORT_MAX_LISTED else ""
        parts.append(f"{len(skipped)} line{'' if len(skipped) == 1 else 's'} skipped: {listed}{more}")
    if gaps:
        listed = ", ".join(g.describe() for g in gaps[:_REPORT_MAX_LISTED])
        more = f", and {len(gaps) - _REPORT_MAX_LISTED} more" if len(gaps) > _REPORT_MAX_LISTED else ""
        parts.append(f"{len(gaps)} seq gap{'' if len(gaps) == 1 else 's'}: {listed}{more}")
    return parts


@dataclass(frozen=True)
class JournalBytes:
    """A journal held in memory: one member of a corpus archive (sessions.archive).

    Readers take it where they take a session folder. `flows` is the folder a header
    that names its flow by hash (`flow_stored`) finds the flow in.
    """

    archive: Path
    index: int  # 1-based, in the archive's order
    data: bytes
    flows: Path | None = None

    @property
    def name(self) -> str:
        return f"{self.archive.name}#{self.index}"

    @property
    def parent(self) -> Path:
        return self.archive.parent

    def __str__(self) -> str:
        return f"{self.archive}#{self.index}"


def _resolve(path: Path) -> Path:
    if isinstance(path, JournalBytes):
        return path
    path = Path(path)
    if path.is_dir() and not (path.name == JOURNAL_FILENAME and not (path / JOURNAL_FILENAME).exists()):
        return path / JOURNAL_FILENAME
    return path  # a file, or a folder standing where the journal file should be (refused on open)


def _preview(text: str) -> str:
    text = text.replace("\r", "\\r").replace("\n", "\\n")
    return text if len(text) <= _PREVIEW_CHARS else text[: _PREVIEW_CHARS - 3] + "..."


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _parse_header(raw: bytes, path: Path) -> dict[str, Any]:
    where = f"{path} line 1"
    expected = 'expected a header object like {"type": "header", "schema": 1, ...}'
    if not raw:
        raise JournalError(f"{where}: file is empty; {expected}")
    try:
        header = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise JournalError(f"{where}: not valid UTF-8; {expected}") from None
    except json.JSONDecodeError as e:
        raise JournalError(f"{where}: invalid JSON at column {e.colno}; {expected}") from None
    if not isinstance(header, dict):
        raise JournalError(f"{where}: found a JSON {type(header).__name__}; {expected}")
    if header.get("type") != "header":
        raise JournalError(f"{where}: 'type' is {header.get('type')!r}, not 'header'; {expected}")
    schema = header.get("schema")
    if isinstance(schema, bool) or not isinstance(schema, int):
        raise JournalError(f"{where}: 'schema' is {schema!r}, not an integer; {expected}")
    if schema not in SUPPORTED_SCHEMAS:
        newer = "a newer" if schema > max(SUPPORTED_SCHEMAS) else "an unknown"
        supported = ", ".join(str(s) for s in SUPPORTED_SCHEMAS)
        raise JournalError(
            f"{where}: journal schema {schema} is {newer} version; supported schema versions: {supported}"
        )
    return header


_stored_flows: dict[tuple[str, str], dict[str, Any]] = {}  # (folder, hash) -> what it adds to a header


def _with_stored_flow(header: dict[str, Any], file_path: Any) -> dict[str, Any]:
    """A header that names its flow by hash, with the flow stored beside the corpus
    (`flows/<hash>.json`, sessions.archive) put back: readers see a whole header."""
    where = f"{file_path} line 1"
    wanted, name = header.get("flow_hash"), header.get("flow_stored")
    if not isinstance(wanted, str) or not isinstance(name, str) or "/" in name.replace("flows/", "", 1) or ".." in name:
        raise JournalError(f"{where}: 'flow_stored' {name!r} with 'flow_hash' {wanted!r}: expected a file under flows/ and its hash")
    if isinstance(file_path, JournalBytes):
        folders = [file_path.flows or file_path.archive.parent]
    else:
        folders = [Path(file_path).parent, Path(file_path).parent.parent]  # the session folder, the corpus
    found = []  # files by that name that are not that flow: said, so a wrong copy is not called missing
    for folder in folders:
        key = (str(folder), wanted)
        if key not in _stored_flows:
            try:
                stored = json.loads((folder / name).read_text(encoding="utf-8"))
            except FileNotFoundError:
                continue
            except OSError as e:
                found.append(f"{folder / name} cannot be read ({e.strerror or e})")
                continue
            except ValueError:
                found.append(f"{folder / name} is not a stored flow (not JSON)")
                continue
            if not isinstance(stored, dict) or document_hash(stored.get("flow_document")) != wanted:
                found.append(f"{folder / name} holds another flow")
                continue
            _stored_flows[key] = {k: v for k, v in stored.items() if k in ("flow_document", "ladder_policy")}
        return {**header, **_stored_flows[key]}
    if found:
        raise JournalError(f"{where}: no stored flow matches its flow hash {wanted}: {'; '.join(found)}")
    raise JournalError(f"{where}: its stored flow {name} is missing "
                       f"(looked in {' and '.join(str(f) for f in folders)}; flow hash {wanted})")


def _after(seq: int) -> str:
    return "start" if seq < 0 else str(seq)


def _record_problem(record: Any, expected_seq: int, last_t_ms: float | None) -> str | None:
    """Why a parsed line cannot be loaded, or None if it can."""
    if not isinstance(record, dict):
        return f"not a JSON object (found {type(record).__name__})"
    for key in _REQUIRED_RECORD_FIELDS:
        if key not in record:
            return f"missing field {key!r}"
    seq, t_ms, kind = record["seq"], record["t_ms"], record["type"]
    if isinstance(seq, bool) or not isinstance(seq, int):
        return f"field 'seq' is {seq!r}, not an integer"
    if not _is_number(t_ms):
        return f"field 't_ms' is {t_ms!r}, not a number"
    if kind not in RECORD_TYPES:
        return f"unknown record type {kind!r}"
    behind = record.get("clock_behind_ms")
    if behind is not None and not (_is_number(behind) and behind >= 0):
        return f"field 'clock_behind_ms' is {behind!r}; expected a number of milliseconds >= 0"
    if seq < expected_seq:
        # A repeat or a step back is the suspicious line; the records already
        # loaded stay authoritative.
        problem = "duplicate" if seq == expected_seq - 1 else "out of order"
        return f"seq {seq} after {_after(expected_seq - 1)}: {problem}"
    if last_t_ms is not None and t_ms < last_t_ms:
        return f"t_ms {t_ms} after {last_t_ms}: time went backwards"
    return None


def _open(file_path: Path):
    if isinstance(file_path, JournalBytes):
        return io.BytesIO(file_path.data)
    try:
        return open(file_path, "rb")
    except OSError as e:
        # one line saying which file and why, not a traceback (a folder in place of
        # the file, no permission, no such file)
        raise JournalError(f"{file_path}: cannot read the journal: {e.strerror or e}") from None


def iter_records(
    path: Path, scan: JournalScan | None = None, *, check: RecordCheck | None = None
) -> Iterator[dict[str, Any]]:
    """Yield the valid records of a journal one at a time, without loading the file.

    ``path`` is a session folder or its journal.jsonl. Pass a fresh
    :class:`JournalScan` to receive the header, the count, the skipped lines
    and seq gaps as reading goes (complete once the generator is exhausted).
    ``check``, given a structurally valid record, returns why its content is
    unusable (or None); such a line is skipped like a corrupt one, but its seq
    counts as seen, so it is not reported a second time as a gap.
    Being a generator, errors surface on the first ``next()``: a bad header or
    a file that cannot be read (missing, a folder, no permission) raise
    :class:`JournalError`.
    """
    file_path = _resolve(path)
    if scan is None:
        scan = JournalScan()
    scan.path, scan.header, scan.loaded = file_path, None, 0
    scan.skipped.clear()
    scan.gaps.clear()
    scan.clock_behind.clear()

    with _open(file_path) as f:
        try:
            first = f.readline()
        except OSError as e:
            raise JournalError(f"{file_path}: cannot read the journal: {e.strerror or e}") from None
        scan.header = _parse_header(first.rstrip(b"\r\n"), file_path)
        if "flow_stored" in scan.header and "flow_document" not in scan.header:
            scan.header = _with_stored_flow(scan.header, file_path)

        expected_seq = 0
        last_t_ms: float | None = None
        # The last record read is held back one line: a record whose t_ms is far ahead of
        # the records on both sides of it (a damaged number, 1e18) is the bad line, not
        # every record after it, and only the next line can tell.
        held: tuple[int, dict[str, Any], bytes] | None = None
        before_held_t: float | None = None  # t_ms of the record loaded before the held one

        def skip(line_no: int, reason: str, text: bytes, record: Any, harmless: bool = False) -> None:
            kind = record.get("type") if isinstance(record, dict) else None
            scan.skipped.append(SkippedLine(
                line_no, reason, _preview(text.decode("utf-8", errors="replace")),
                kind if kind in RECORD_TYPES else None, scan.loaded + (held is not None), harmless,
            ))

        for line_no, raw in enumerate(f, start=2):
            text = raw.rstrip(b"\r\n")
            reason: str | None
            record: Any = None
            if held is not None and text == held[2]:
                skip(line_no, f"an exact copy of line {held[0]}", text, None, harmless=True)
                continue
            if not text.strip():
                reason = "blank line"
            else:
                try:
                    record = json.loads(text.decode("utf-8"))
                except (UnicodeDecodeError, json.JSONDecodeError) as e:
                    if not raw.endswith(b"\n"):
                        # Only the last line can lack its newline; unparsable
                        # there means the writer died mid-line, not corruption.
                        reason = "truncated final line"
                    elif isinstance(e, json.JSONDecodeError):
                        reason = f"invalid JSON at column {e.colno}"
                    else:
                        reason = "not valid UTF-8"
                else:
                    reason = _record_problem(record, expected_seq, last_t_ms)
                    if (
                        reason is not None and reason.endswith("time went backwards") and held is not None
                        and (before_held_t is None or record["t_ms"] >= before_held_t)
                    ):
                        # this line agrees with the one before the held record: the held one is wrong
                        held_line, held_record, held_text = held
                        held = None
                        skip(held_line, f"t_ms {held_record['t_ms']} is ahead of the records before and after it "
                             f"({before_held_t} and {record['t_ms']}): a damaged time", held_text, held_record)
                        last_t_ms = before_held_t
                        reason = _record_problem(record, expected_seq, last_t_ms)
                    if reason is None and check is not None:
                        reason = check(record)
                        if reason is not None:
                            # the line is well formed, only its content is unusable:
                            # its seq and time were written, so nothing is missing
                            expected_seq = record["seq"] + 1
                            last_t_ms = record["t_ms"]
            if reason is not None:
                skip(line_no, reason, text, record)
                continue
            seq = record["seq"]
            if seq > expected_seq:
                scan.gaps.append(SeqGap(line_no, expected_seq, seq, scan.loaded + (held is not None)))
            expected_seq = seq + 1
            if held is not None:
                before_held_t = held[1]["t_ms"]
                yield from _loaded(scan, held[1])
            elif scan.loaded == 0:
                before_held_t = None
            held = (line_no, record, text)
            last_t_ms = record["t_ms"]
        if held is not None:
            yield from _loaded(scan, held[1])


def _loaded(scan: JournalScan, record: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if "clock_behind_ms" in record:
        scan.clock_behind.append((record["seq"], record["clock_behind_ms"]))
    scan.loaded += 1
    yield record


def read_journal(path: Path, *, check: RecordCheck | None = None) -> Journal:
    """Load a whole journal (folder or journal.jsonl); see the module docstring for the rules."""
    scan = JournalScan()
    records = list(iter_records(path, scan, check=check))
    # iter_records sets both before yielding anything, or raises.
    header = scan.header if scan.header is not None else {}
    return Journal(
        header=header,
        records=records,
        skipped=list(scan.skipped),
        path=scan.path if scan.path is not None else _resolve(path),
        gaps=list(scan.gaps),
        clock_behind=list(scan.clock_behind),
    )
