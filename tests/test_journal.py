"""Tests for the session journal (design rules S1 and S6)."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sessions.journal import (
    JOURNAL_FILENAME,
    JOURNAL_SCHEMA,
    JournalError,
    JournalScan,
    JournalWriter,
    iter_records,
    read_journal,
)

REPO_ROOT = Path(__file__).resolve().parents[1]

HEADER = {
    "flow_hash": "sha256:abc123",
    "ladder_policy": {"rungs": [4000, 8000, 12000], "final": "hang_up"},
    "models": {"asr": "tiny", "tts": "piper-en"},
    "devices": {"input": "default", "output": "default"},
}


def fixed_clock(start: datetime | None = None):
    """A wall clock that ticks one second per call, so 'wall' fields are predictable."""
    now = [start or datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)]

    def clock() -> datetime:
        value = now[0]
        now[0] = value + timedelta(seconds=1)
        return value

    return clock


def write_numbered(folder: Path, count: int) -> Path:
    """A journal of `count` alternating input/decision records; returns the file."""
    with JournalWriter.create(folder, HEADER, wall_clock=fixed_clock()) as w:
        for i in range(count):
            if i % 2 == 0:
                w.write_input(i * 10, {"kind": "caller_silence", "turn": i})
            else:
                w.write_decision(i * 10, {"kind": "reprompt", "reason": "silence", "turn": i})
    return w.path


def test_round_trip_header_and_records(tmp_path: Path) -> None:
    folder = tmp_path / "calls" / "call-1"  # parents are created
    payloads = [
        ("input", 0, {"kind": "caller_speech_end", "turn": 1}),
        ("decision", 0, {"kind": "start_timer", "reason": "await_answer", "question": "q1", "generation": 3}),
        ("input", 4000, {"kind": "timer_fired", "token": "t-9", "episode": 1}),
        ("decision", 4000.5, {"kind": "say", "stage": "nudge", "text": "Are you still there? — ¿Sigue ahí?"}),
    ]
    with JournalWriter.create(folder, HEADER, wall_clock=fixed_clock()) as w:
        returned = [
            (w.write_input if kind == "input" else w.write_decision)(t, payload) for kind, t, payload in payloads
        ]
    assert w.path == folder / JOURNAL_FILENAME

    journal = read_journal(folder)
    assert journal.header["type"] == "header"
    assert journal.header["schema"] == JOURNAL_SCHEMA
    assert journal.header["created"] == "2025-01-02T03:04:05.000000+00:00"
    for key, value in HEADER.items():
        assert journal.header[key] == value
    assert journal.records == returned
    assert [r["seq"] for r in journal.records] == [0, 1, 2, 3]
    assert [r["type"] for r in journal.records] == [kind for kind, _, _ in payloads]
    assert [r["t_ms"] for r in journal.records] == [0, 0, 4000, 4000.5]
    assert journal.records[1]["wall"] == "2025-01-02T03:04:07.000000+00:00"
    for record, (_, _, payload) in zip(journal.records, payloads):
        assert {k: record[k] for k in payload} == payload
    assert [r["seq"] for r in journal.inputs()] == [0, 2]
    assert [r["seq"] for r in journal.decisions()] == [1, 3]
    assert journal.skipped == [] and journal.gaps == [] and journal.intact
    assert journal.report() == "call-1/journal.jsonl: 4 records loaded; no lines skipped"
    # The file path works as well as the folder.
    assert read_journal(folder / JOURNAL_FILENAME).records == journal.records


def test_each_line_is_on_disk_before_close(tmp_path: Path) -> None:
    w = JournalWriter.create(tmp_path / "s", HEADER)
    try:
        for i in range(5):
            w.write_input(i, {"kind": "media", "n": i})
            # A separate open sees the line immediately: nothing waits in a buffer.
            lines = w.path.read_text(encoding="utf-8").splitlines()
            assert len(lines) == i + 2
            assert json.loads(lines[-1])["n"] == i
        assert [r["n"] for r in read_journal(w.path).records] == [0, 1, 2, 3, 4]
    finally:
        w.close()


def test_refuses_to_overwrite_existing_journal(tmp_path: Path) -> None:
    path = write_numbered(tmp_path / "s", 3)
    before = path.read_bytes()
    with pytest.raises(FileExistsError, match="refusing to overwrite"):
        JournalWriter.create(tmp_path / "s", {"flow_hash": "other"})
    assert path.read_bytes() == before


def test_truncated_final_line_keeps_earlier_records(tmp_path: Path) -> None:
    path = write_numbered(tmp_path / "s", 10)
    data = path.read_bytes()
    last_line_start = data.rstrip(b"\n").rfind(b"\n") + 1
    # Simulate a kill in the middle of writing the last record (line 11).
    path.write_bytes(data[: last_line_start + (len(data) - last_line_start) // 2])

    journal = read_journal(tmp_path / "s")
    assert [r["seq"] for r in journal.records] == list(range(9))
    assert len(journal.skipped) == 1
    assert journal.skipped[0].line_no == 11
    assert journal.skipped[0].reason == "truncated final line"
    assert journal.skipped[0].text_preview.startswith('{"seq":9')
    assert journal.report() == "s/journal.jsonl: 9 records loaded; 1 line skipped: line 11 truncated final line"


def test_corrupted_middle_line_is_skipped_and_later_records_load(tmp_path: Path) -> None:
    path = write_numbered(tmp_path / "s", 10)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[5] = b'{"seq":4,"t_ms":40,"type":"input",#garbage\n'  # record seq 4 is line 6
    path.write_bytes(b"".join(lines))

    journal = read_journal(path)
    assert [r["seq"] for r in journal.records] == [0, 1, 2, 3, 5, 6, 7, 8, 9]
    assert len(journal.skipped) == 1
    skipped = journal.skipped[0]
    assert skipped.line_no == 6
    assert skipped.reason.startswith("invalid JSON at column 35")
    assert "#garbage" in skipped.text_preview
    # The missing seq is reported, at the line where reading noticed it.
    assert len(journal.gaps) == 1
    assert (journal.gaps[0].line_no, journal.gaps[0].expected, journal.gaps[0].found) == (7, 4, 5)
    assert not journal.intact
    report = journal.report()
    assert "9 records loaded" in report
    assert "1 line skipped: line 6 invalid JSON at column 35" in report
    assert "line 7 seq 5 after 3: gap (1 record missing)" in report


def test_bad_record_lines_are_skipped_with_reasons(tmp_path: Path) -> None:
    path = write_numbered(tmp_path / "s", 3)
    with path.open("ab") as f:
        f.write(b"[1, 2]\n")  # line 5
        f.write(b'{"t_ms": 50, "type": "input"}\n')  # line 6
        f.write(b'{"seq": 1, "t_ms": 50, "type": "input"}\n')  # line 7: seq already used
        f.write(b'{"seq": 3, "t_ms": 5, "type": "input"}\n')  # line 8: time went backwards
        f.write(b'{"seq": 3, "t_ms": 50, "type": "input"}\n')  # line 9: fine
    journal = read_journal(path)
    assert [r["seq"] for r in journal.records] == [0, 1, 2, 3]
    assert [(s.line_no, s.reason) for s in journal.skipped] == [
        (5, "not a JSON object (found list)"),
        (6, "missing field 'seq'"),
        (7, "seq 1 after 2: out of order"),
        (8, "t_ms 5 after 20: time went backwards"),
    ]
    assert "4 lines skipped" in journal.report()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "file is empty"),
        (b"this is not json\n", "invalid JSON at column 1"),
        (b'{"seq": 0, "t_ms": 0, "type": "input"}\n', "'type' is 'input', not 'header'"),
    ],
    ids=["missing-header", "garbage-first-line", "record-instead-of-header"],
)
def test_unusable_header_raises_journal_error(tmp_path: Path, content: bytes, expected: str) -> None:
    path = tmp_path / JOURNAL_FILENAME
    path.write_bytes(content)
    with pytest.raises(JournalError) as info:
        read_journal(path)
    message = str(info.value)
    assert str(path) in message
    assert "line 1" in message
    assert expected in message
    assert "\n" not in message
    assert isinstance(info.value, ValueError)


def test_newer_schema_names_supported_versions(tmp_path: Path) -> None:
    path = tmp_path / JOURNAL_FILENAME
    path.write_text(json.dumps({"type": "header", "schema": JOURNAL_SCHEMA + 1}) + "\n", encoding="utf-8")
    with pytest.raises(JournalError) as info:
        read_journal(tmp_path)
    message = str(info.value)
    assert str(path) in message
    assert f"schema {JOURNAL_SCHEMA + 1} is a newer version" in message
    assert f"supported schema versions: {JOURNAL_SCHEMA}" in message


def test_unserialisable_payload_names_key_and_writes_nothing(tmp_path: Path) -> None:
    with JournalWriter.create(tmp_path / "s", HEADER) as w:
        w.write_input(0, {"kind": "caller_speech_end"})
        before = w.path.read_bytes()
        with pytest.raises(TypeError, match=r"'audio'.*bytes"):
            w.write_input(10, {"kind": "media", "audio": b"\x00\x01"})
        with pytest.raises(TypeError, match=r"'detail\.scores\[1\]'"):
            w.write_decision(10, {"kind": "say", "detail": {"scores": [1.0, float("nan")]}})
        assert w.path.read_bytes() == before
        assert before.endswith(b"\n")
        # The failed writes used up no seq: the next record follows on.
        assert w.write_input(10, {"kind": "media"})["seq"] == 1
    assert [r["seq"] for r in read_journal(w.path).records] == [0, 1]


def test_t_ms_going_backwards_is_written_held_at_the_last_time_and_says_by_how_much(tmp_path: Path) -> None:
    with JournalWriter.create(tmp_path / "s", HEADER) as w:
        w.write_input(100, {"kind": "timer_fired"})
        w.write_decision(100, {"kind": "say"})  # equal is fine
        held = w.write_input(98.875, {"kind": "caller_speech_start"})  # two clocks disagree
        w.write_decision(101, {"kind": "say"})
    assert held["t_ms"] == 100 and held["clock_behind_ms"] == 1.125
    journal = read_journal(w.path)
    assert [r["t_ms"] for r in journal.records] == [100, 100, 100, 101]  # never backwards
    assert journal.skipped == [] and journal.clock_behind == [(2, 1.125)]
    assert "clock_behind_ms" not in journal.records[3]
    assert journal.report() == (
        "s/journal.jsonl: 4 records loaded; no lines skipped; 1 record held at the previous time "
        "because the clock was behind (by up to 1.125 ms; first at seq 2)"
    )


def test_the_clock_field_is_the_journals_own(tmp_path: Path) -> None:
    with JournalWriter.create(tmp_path / "s", HEADER) as w:
        with pytest.raises(ValueError, match="clock_behind_ms"):
            w.write_input(0, {"kind": "x", "clock_behind_ms": 3})
    with w.path.open("ab") as f:
        f.write(b'{"seq": 0, "t_ms": 5, "type": "input", "clock_behind_ms": "a lot"}\n')
    [skipped] = read_journal(w.path).skipped
    assert skipped.reason == "field 'clock_behind_ms' is 'a lot'; expected a number of milliseconds >= 0"


def test_a_check_skips_unusable_content_without_inventing_a_gap(tmp_path: Path) -> None:
    path = write_numbered(tmp_path / "s", 6)

    def check(record):
        return "field 'turn' is 2, expected 'odd'" if record.get("turn") == 2 else None

    journal = read_journal(path, check=check)
    assert [r["seq"] for r in journal.records] == [0, 1, 3, 4, 5]
    [skipped] = journal.skipped
    assert (skipped.line_no, skipped.record_type, skipped.position) == (4, "input", 2)
    assert skipped.reason == "field 'turn' is 2, expected 'odd'"
    assert journal.gaps == []  # the line was whole: nothing is missing, one line is unusable
    assert "1 line skipped: line 4 field 'turn' is 2" in journal.report()


def test_skipped_lines_and_gaps_know_where_they_were(tmp_path: Path) -> None:
    path = write_numbered(tmp_path / "s", 6)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[3] = b'{"seq": 2, "type": "input"}\n'  # no t_ms, but readable as an input
    lines[5] = b"#garbage\n"
    path.write_bytes(b"".join(lines))
    journal = read_journal(path)
    assert [(s.line_no, s.record_type, s.position) for s in journal.skipped] == [(4, "input", 2), (6, None, 3)]
    assert [(g.line_no, g.position) for g in journal.gaps] == [(5, 2), (7, 3)]


@pytest.mark.parametrize("how", ["folder in place of the file", "no permission"])
def test_an_unreadable_journal_is_one_journal_error(tmp_path: Path, how: str) -> None:
    import os

    folder = tmp_path / "s"
    if how == "folder in place of the file":
        (folder / JOURNAL_FILENAME).mkdir(parents=True)
    else:
        if os.geteuid() == 0:
            pytest.skip("root reads files whatever their mode")
        path = write_numbered(folder, 2)
        path.chmod(0)
    for target in (folder, folder / JOURNAL_FILENAME):
        with pytest.raises(JournalError) as info:
            read_journal(target)
        message = str(info.value)
        assert f"{folder / JOURNAL_FILENAME}: cannot read the journal: " in message and "\n" not in message
        with pytest.raises(JournalError):
            next(iter_records(target))


def test_a_missing_journal_is_a_journal_error(tmp_path: Path) -> None:
    with pytest.raises(JournalError, match="cannot read the journal: No such file"):
        read_journal(tmp_path / "nothing")


def test_reserved_keys_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="schema"):
        JournalWriter.create(tmp_path / "a", {"schema": 99})
    assert not (tmp_path / "a" / JOURNAL_FILENAME).exists()
    with JournalWriter.create(tmp_path / "b", HEADER) as w:
        with pytest.raises(ValueError, match="seq"):
            w.write_input(0, {"seq": 5, "kind": "x"})


def test_killed_writer_leaves_a_readable_journal(tmp_path: Path) -> None:
    folder = tmp_path / "killed"
    script = textwrap.dedent(
        """
        import os, sys
        from pathlib import Path
        from sessions.journal import JournalWriter

        w = JournalWriter.create(Path(sys.argv[1]), {"flow_hash": "f"})
        for i in range(50):
            (w.write_input if i % 2 == 0 else w.write_decision)(i * 5, {"kind": "tick", "i": i})
        os._exit(0)  # no close(), no interpreter cleanup
        """
    )
    subprocess.run(
        [sys.executable, "-c", script, str(folder)], cwd=REPO_ROOT, check=True, timeout=60
    )
    journal = read_journal(folder)
    assert [r["i"] for r in journal.records] == list(range(50))
    assert journal.skipped == []
    assert journal.report() == "killed/journal.jsonl: 50 records loaded; no lines skipped"


def test_iter_records_streams_a_large_journal(tmp_path: Path) -> None:
    path = write_numbered(tmp_path / "big", 20_000)
    with path.open("ab") as f:
        f.write(b'{"seq": 20000, "t_ms"')  # a killed tail

    scan = JournalScan()
    stream = iter_records(tmp_path / "big", scan)
    assert inspect.isgenerator(stream)
    first = next(stream)
    assert first["seq"] == 0
    assert scan.header is not None and scan.header["flow_hash"] == HEADER["flow_hash"]
    assert scan.loaded == 1  # only what has been consumed so far
    count = 1 + sum(1 for _ in stream)
    assert count == 20_000
    assert scan.loaded == 20_000
    assert [(s.line_no, s.reason) for s in scan.skipped] == [(20_002, "truncated final line")]
    assert scan.report() == (
        "big/journal.jsonl: 20000 records loaded; 1 line skipped: line 20002 truncated final line"
    )
