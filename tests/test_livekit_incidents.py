"""`lull incidents run --via livekit`: every library incident through a real LiveKit
AgentSession (its audio recognition, speech queue and handles, Lull's `LullLadder`, a
scripted VAD and STT, a clocked output) on a virtual-time loop, with the verdict the
virtual clock gives."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("livekit.agents", reason="the livekit extra is not installed")

from typer.testing import CliRunner  # noqa: E402

from console.cli import app  # noqa: E402
from sessions.incidents import load_library, run_incident  # noqa: E402
from sessions.replay import replay  # noqa: E402
from voices.livekit import quiet_livekit_logs  # noqa: E402
from voices.livekit.incidents import run_incident_via_livekit  # noqa: E402

LIBRARY = load_library()
quiet_livekit_logs()


@pytest.mark.parametrize("incident", LIBRARY, ids=[i.name for i in LIBRARY])
def test_every_library_incident_passes_through_livekit_as_on_the_virtual_clock(incident, tmp_path):
    outcome, run = run_incident_via_livekit(incident, record_to=tmp_path / incident.name)
    on_the_clock = run_incident(incident)
    assert outcome.failures == []
    assert outcome.snapshot == on_the_clock.snapshot
    timed = lambda records: [{**r, "at": float(r["at"])} for r in records]  # noqa: E731
    if not any(r.get("effect") == "CancelPrompt" for r in on_the_clock.records):
        # the same decisions, in the same order, at the same times
        assert timed(outcome.records) == timed(on_the_clock.records)
    else:
        # a cut prompt: the output reports it stopped when its buffer is cleared, the
        # virtual clock's endpoint when the audio would have ended; the prompts are the same
        prompts = lambda records: [r for r in timed(records) if r.get("effect") == "RequestPrompt"]  # noqa: E731
        assert prompts(outcome.records) == prompts(on_the_clock.records)
    # and its journal (source: livekit) replays as decided
    assert json.loads((tmp_path / incident.name / "journal.jsonl").read_text().splitlines()[0])["source"] == "livekit"
    result = replay(tmp_path / incident.name)
    assert result.verdict == "CLEAN", result.describe()


def test_the_callers_turns_and_tools_go_in_through_livekit_where_it_has_a_way_in():
    by_name = {i.name: i for i in LIBRARY}
    _, run = run_incident_via_livekit(by_name["seven_waits"])
    assert run.as_native >= 17  # every turn's start and end (the VAD) and words (the STT)
    _, run = run_incident_via_livekit(by_name["tool_past_filler"])
    assert run.as_native == 2  # the tool's start and end, as the session's tool events
    _, run = run_incident_via_livekit(by_name["duplicate_timeout"])
    assert run.as_native == 0 and run.as_events == 3  # a duplicate timer callback has no way in


def test_lulls_own_wording_is_kept_and_the_callers_digits_masked_in_a_livekit_journal(tmp_path):
    by_name = {i.name: i for i in LIBRARY}
    run_incident_via_livekit(by_name["tool_past_filler"], record_to=tmp_path / "filler")
    run_incident_via_livekit(by_name["seven_waits"], record_to=tmp_path / "answer")
    assert "One moment while I check that." in (tmp_path / "filler" / "journal.jsonl").read_text()
    answer = (tmp_path / "answer" / "journal.jsonl").read_text()
    values = [json.loads(line).get("value") for line in answer.splitlines() if '"value"' in line]
    assert values and "4821" not in values and "0123" in values
    for folder in ("filler", "answer"):
        assert replay(tmp_path / folder).verdict == "CLEAN"


def test_the_cli_runs_the_library_through_livekit(tmp_path):
    result = CliRunner().invoke(app, ["incidents", "run", "--via", "livekit", "--record", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert f"{len(LIBRARY)} of {len(LIBRARY)} incidents passed" in result.output
    assert "through LullLadder.feed" in result.output
    result = CliRunner().invoke(app, ["sessions", "replay", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert result.output.count("CLEAN") >= len(LIBRARY)
    # coverage reads them as the ladder alone, beside an LLM, as LiveKit ran it
    result = CliRunner().invoke(app, ["sessions", "coverage", str(tmp_path / "out"), "--json"])
    assert result.exit_code == 0, result.output
    assert "(livekit: the ladder alone)" in result.output
