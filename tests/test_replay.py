"""Replay (S2): recorded sessions re-run through the core, CLEAN or DRIFT."""

import asyncio
import json
from pathlib import Path

import pytest
from console_fixtures import compile_data, journal_text_without_clocks, quick_flow_data

from console.headless import rehearse_headless
from console.live import LiveSession
from console.text_backend import TextBackend
from sessions.incidents import library_paths, load_incident, run_incident
from sessions.replay import replay
from sessions.scenarios import load_scenario, run_scenario

SCENARIOS = sorted((Path(__file__).parent / "scenarios").glob("*.json"))


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_every_simulated_session_replays_clean(path, tmp_path):
    run_scenario(load_scenario(path), path, record_to=tmp_path / "s")
    result = replay(tmp_path / "s")
    assert result.verdict == "CLEAN", result.describe()
    assert result.inputs > 3 and result.decisions > 10


def test_every_incident_journal_replays_clean(tmp_path):
    for path in library_paths():
        run_incident(load_incident(path), record_to=tmp_path / path.stem)
        result = replay(tmp_path / path.stem)
        assert result.verdict == "CLEAN", result.describe()


def test_a_redacted_journal_still_replays_clean(tmp_path):
    path = next(p for p in SCENARIOS if p.stem == "redacted_keys_stay_out_of_the_journal")
    run_scenario(load_scenario(path), path, record_to=tmp_path / "s")
    text = journal_text_without_clocks(tmp_path / "s" / "journal.jsonl")
    assert "4821" not in text and "it's 0 1" in text  # digits masked, words kept
    assert replay(tmp_path / "s").verdict == "CLEAN"


def test_a_changed_policy_drifts_at_the_first_differing_decision(tmp_path):
    path = next(p for p in library_paths() if p.stem == "duplicate_timeout")
    run_incident(load_incident(path), record_to=tmp_path / "s")
    journal = tmp_path / "s" / "journal.jsonl"
    lines = journal.read_text().splitlines()
    header = json.loads(lines[0])
    header["ladder_policy"]["stages"][0]["wait_ms"] = 5000  # the quiet wait is shorter now
    journal.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    result = replay(tmp_path / "s")
    assert result.verdict == "DRIFT"
    diff = result.first_difference
    assert diff["expected"]["kind"] == "window_armed" and diff["expected"]["detail"]["due"] == 9600
    assert diff["got"]["detail"]["due"] == 6600
    assert "DRIFT at journal seq" in result.describe()


def test_a_live_text_session_replays_clean(tmp_path):
    backend = TextBackend(ms_per_word=20, start_delay_ms=10)
    session = LiveSession(compile_data(quick_flow_data()), backend, journal_dir=tmp_path / "live")
    asyncio.run(
        asyncio.wait_for(
            rehearse_headless(session, backend.say, lines=iter(["give me a moment", "4 8 2 1", "yes"]), write=lambda s: None, speaking=lambda: backend.speaking),
            timeout=30,
        )
    )
    result = replay(tmp_path / "live")
    assert result.verdict == "CLEAN", result.describe()
    assert result.inputs > 10


def test_a_truncated_journal_replays_what_it_holds_and_says_what_was_skipped(tmp_path):
    path = next(p for p in SCENARIOS if p.stem == "default_answer_at_once")
    run_scenario(load_scenario(path), path, record_to=tmp_path / "s")
    journal = tmp_path / "s" / "journal.jsonl"
    data = journal.read_bytes()
    journal.write_bytes(data[: len(data) - 40])  # killed mid-line
    result = replay(tmp_path / "s")
    assert "truncated final line" in result.report
    assert result.verdict == "CLEAN", result.describe()  # what was written replays identically
    assert result.inputs > 10


def test_a_call_whose_wording_was_edited_mid_call_replays_clean(tmp_path):
    from console.prompts import apply_to_call
    from console_fixtures import Clock, SilentBackend
    from ladder import PlaybackCompleted, PlaybackStarted, StartCall

    clock, backend = Clock(), SilentBackend()
    data = quick_flow_data()
    session = LiveSession(compile_data(data), backend, journal_dir=tmp_path / "edited", clock=clock)

    async def body():
        await session.start()
        for _ in range(3):  # greeting, disclosure, question
            token = backend.spoken[-1].token
            session.feed(PlaybackStarted(token))
            clock.advance(0.5)
            session.feed(PlaybackCompleted(token))
        apply_to_call(session, data, {("ladder", "stages", 1, "prompt"): "No rush at all."}, "edit")
        clock.advance(0.45)
        session._on_timer()
        assert backend.spoken[-1].text == "No rush at all."
        await session.stop()

    asyncio.run(body())
    result = replay(tmp_path / "edited")
    assert result.verdict == "CLEAN", result.describe()
    from sessions.journal import read_journal

    inputs = [r["kind"] for r in read_journal(tmp_path / "edited").inputs()]
    assert "edit_wording" in inputs
