"""Replay (S2): recorded sessions re-run through the core, CLEAN or DRIFT."""

import asyncio
import json
from pathlib import Path

import pytest
from console_fixtures import compile_data, journal_text_without_clocks, quick_flow_data

from console.headless import rehearse_headless
from sessions.incidents import library_paths, load_incident, run_incident
from sessions.journal import read_journal
from sessions.live import LiveSession
from sessions.replay import replay
from sessions.scenarios import load_scenario, run_scenario
from voices.backends.text import TextBackend

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
    from console_fixtures import Clock, SilentBackend

    from console.prompts import apply_to_call
    from ladder import PlaybackCompleted, PlaybackStarted

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


# -- journals a killed process, a disagreeing clock or a bad line left behind ----------------


def recorded_lines(tmp_path, name="default_hold_then_answer"):
    """A simulated session's journal, as (folder, header line, record lines)."""
    path = next(p for p in SCENARIOS if p.stem == name)
    run_scenario(load_scenario(path), path, record_to=tmp_path / "s")
    lines = (tmp_path / "s" / "journal.jsonl").read_text().splitlines()
    return tmp_path / "s", lines[0], lines[1:]


def write_lines(folder, header, lines, tail=""):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "journal.jsonl").write_text("\n".join([header, *lines]) + "\n" + tail)
    return folder


def test_a_time_held_by_the_writer_replays_clean_at_the_held_time(tmp_path):
    from sessions.journal import JournalWriter, read_journal

    folder, header, lines = recorded_lines(tmp_path)
    records = [json.loads(line) for line in lines]
    # an input at the same time as the record before it, handed to the writer by a
    # clock that is 2.5 ms behind: written at the journal's time, so it replays alike
    held = next(i for i, r in enumerate(records) if r["type"] == "input" and i and r["t_ms"] == records[i - 1]["t_ms"] > 0)
    head = {k: v for k, v in json.loads(header).items() if k not in ("type", "schema", "created")}
    with JournalWriter.create(tmp_path / "held", head) as writer:
        for i, record in enumerate(records):
            payload = {k: v for k, v in record.items() if k not in ("seq", "t_ms", "wall", "type")}
            t_ms = record["t_ms"] - 2.5 if i == held else record["t_ms"]
            (writer.write_input if record["type"] == "input" else writer.write_decision)(t_ms, payload)
    journal = read_journal(tmp_path / "held")
    assert journal.clock_behind == [(held, 2.5)] and journal.records[held]["t_ms"] == records[held]["t_ms"]
    result = replay(tmp_path / "held")
    assert result.verdict == "CLEAN", result.describe()
    assert result.inputs == sum(r["type"] == "input" for r in records)
    assert "held at the previous time because the clock was behind (by up to 2.5 ms" in result.report


BAD_INPUTS = {
    "a string token": (lambda e: e.update(token=str(e["token"])), "field 'event.token' is \"1\"; expected an integer"),
    "no event": (lambda e: e.clear(), "field 'event' is missing; an input holds the ladder event it fed"),
    "an unknown event kind": (lambda e: e.update(kind="playback_exploded"), "field 'event.kind' is \"playback_exploded\"; not a ladder event kind"),
}


@pytest.mark.parametrize("damage", BAD_INPUTS, ids=list(BAD_INPUTS))
def test_a_bad_input_line_is_skipped_by_line_and_field_and_replay_goes_on_past_it(tmp_path, damage):
    from sessions.replay import read_session

    folder, header, lines = recorded_lines(tmp_path)
    index = next(i for i, line in enumerate(lines) if '"kind":"playback_started"' in line and '"token":1' in line)
    record = json.loads(lines[index])
    spoil, reason = BAD_INPUTS[damage]
    spoil(record["event"])
    if not record["event"]:
        del record["event"]
    lines[index] = json.dumps(record)
    write_lines(folder, header, lines)
    line_no = index + 2  # the header is line 1

    journal = read_session(folder)
    [skipped] = journal.skipped
    assert (skipped.line_no, skipped.reason, skipped.record_type) == (line_no, reason, "input")
    assert len(journal.records) == len(lines) - 1  # the rest of the journal loads
    assert f"line {line_no} {reason}" in journal.report()
    result = replay(folder)  # no traceback
    # the core missed an input: never CLEAN, and a difference after it is not called drift
    assert result.verdict == "INCOMPLETE", result.describe()
    assert f"a skipped input at line {line_no} ({reason})" in result.describe()
    assert result.first_difference is None and result.stopped is None
    # the lost playback start makes the core decide otherwise from there on: not judged, and said
    assert result.not_judged is not None and f"line {line_no}" in result.not_judged


def test_a_bad_decision_leaves_its_step_unverified_and_replay_goes_on(tmp_path):
    folder, header, lines = recorded_lines(tmp_path)
    index = next(i for i, line in enumerate(lines) if '"effect":"RequestPrompt"' in line and '"token":2' in line)
    record = json.loads(lines[index])
    record["token"] = "two"
    lines[index] = json.dumps(record)
    write_lines(folder, header, lines)
    result = replay(folder)
    assert result.verdict == "INCOMPLETE", result.describe()  # one step could not be compared
    assert result.stopped is None and result.inputs == sum('"type":"input"' in line for line in lines)
    assert result.not_judged is None  # every other step was compared
    assert len(result.unverified) == 1 and f"line {index + 2} (field 'token' is \"two\"; expected an integer)" in result.unverified[0]


def test_a_journal_cut_between_an_input_and_its_decisions_is_incomplete_not_drift(tmp_path):
    folder, header, lines = recorded_lines(tmp_path)
    inputs = [i for i, line in enumerate(lines) if '"type":"input"' in line]
    cut = next(i for i in reversed(inputs) if i + 3 < len(lines) and '"type":"decision"' in lines[i + 1])
    step_seq = json.loads(lines[cut])["seq"]
    for kept, tail in ((cut + 1, ""), (cut + 2, lines[cut + 2][:30])):  # at a line end; mid-line
        write_lines(folder, header, lines[:kept], tail)
        result = replay(folder)
        assert result.verdict == "CLEAN", result.describe()
        assert "DRIFT" not in result.describe() and "recorded null" not in result.describe()
        assert f"the journal ends inside the step at seq {step_seq}" in result.incomplete
        assert f"{kept - cut - 1} of its" in result.incomplete
        assert ("truncated final line" in result.report) == bool(tail)


def test_a_changed_decision_in_the_last_step_is_still_drift(tmp_path):
    folder, header, lines = recorded_lines(tmp_path)
    record = json.loads(lines[-1])
    record["reason"] = "something_else"
    write_lines(folder, header, lines[:-1] + [json.dumps(record)])
    result = replay(folder)
    assert result.verdict == "DRIFT" and result.incomplete is None
    assert result.first_difference["expected"]["reason"] == "something_else"


def test_every_cut_of_a_recording_replays_clean_and_exports_fixtures_that_pass(tmp_path):
    from sessions.export import export_incident, export_scenario
    from sessions.incidents import parse_incident, run_incident
    from sessions.scenarios import Scenario

    folder, header, lines = recorded_lines(tmp_path)
    for kept in range(1, len(lines), 5):
        for tail in ("", lines[kept][: len(lines[kept]) // 2]):
            cut = write_lines(tmp_path / f"cut{kept}{'t' if tail else ''}", header, lines[:kept], tail)
            result = replay(cut)
            assert result.verdict == "CLEAN", result.describe()
            incident = export_incident(cut, "cut")
            outcome = run_incident(parse_incident(json.loads(json.dumps(incident)), "cut.json"))
            assert outcome.passed, (kept, outcome.failures)
            scenario = export_scenario(cut, "cut")
            outcome = run_scenario(Scenario.model_validate(scenario), tmp_path / "cut.json")
            assert outcome.passed, (kept, outcome.failures)


# -- damaged journals keep their verdict honest ------------------------------------------------


def lull_replay(folder):
    import shutil
    import subprocess
    import sys

    lull = shutil.which("lull", path=str(Path(sys.executable).parent)) or "lull"
    return subprocess.run([lull, "sessions", "replay", str(folder)], capture_output=True, text=True, timeout=120)


def test_an_unreadable_line_mid_journal_is_replayed_past_and_the_verdict_is_incomplete(tmp_path):
    folder, header, lines = recorded_lines(tmp_path)
    middle = len(lines) // 2
    write_lines(folder, header, lines[:middle] + ["}{ not json"] + lines[middle:])
    result = replay(folder)
    assert result.verdict == "INCOMPLETE", result.describe()
    assert result.stopped is None and result.not_judged is None
    assert result.inputs == sum('"type":"input"' in line for line in lines)  # all of them, past the line
    assert f"line {middle + 2} (invalid JSON at column 1)" in result.describe()
    ran = lull_replay(folder)
    assert ran.returncode == 3 and ran.stdout.startswith("INCOMPLETE"), ran.stdout + ran.stderr


def test_one_record_with_a_damaged_time_costs_that_record_only(tmp_path):
    from sessions.replay import read_session

    folder, header, lines = recorded_lines(tmp_path)
    middle = next(i for i in range(len(lines) // 2, len(lines)) if '"type":"decision"' in lines[i])
    record = json.loads(lines[middle])
    record["t_ms"] = 1e18
    write_lines(folder, header, lines[:middle] + [json.dumps(record)] + lines[middle + 1 :])
    journal = read_session(folder)
    [skipped] = journal.skipped
    assert skipped.line_no == middle + 2 and "ahead of the records before and after it" in skipped.reason
    assert len(journal.records) == len(lines) - 1
    result = replay(folder)
    assert result.verdict == "INCOMPLETE", result.describe()  # one step could not be compared
    assert result.not_judged is None and len(result.unverified) == 1
    assert result.inputs == sum('"type":"input"' in line for line in lines)


@pytest.mark.parametrize("kind", ["input", "decision"])
def test_an_exact_copy_of_a_line_loses_nothing_and_replays_clean(tmp_path, kind):
    folder, header, lines = recorded_lines(tmp_path)
    index = next(i for i in range(len(lines) // 2, len(lines)) if f'"type":"{kind}"' in lines[i])
    write_lines(folder, header, lines[: index + 1] + [lines[index]] + lines[index + 1 :])
    result = replay(folder)
    assert result.verdict == "CLEAN", result.describe()
    assert result.inputs == sum('"type":"input"' in line for line in lines)
    assert f"line {index + 3} an exact copy of line {index + 2}" in result.report
    assert lull_replay(folder).returncode == 0


def test_after_a_lost_input_a_different_decision_is_not_called_drift(tmp_path):
    folder, header, lines = recorded_lines(tmp_path)
    # the caller's first words: without them the core decides otherwise from there on
    index = next(i for i, line in enumerate(lines) if '"type":"input"' in line and '"kind":"caller_utterance"' in line)
    write_lines(folder, header, lines[:index] + ["garbage"] + lines[index + 1 :])
    result = replay(folder)
    assert result.verdict == "INCOMPLETE", result.describe()
    assert result.first_difference is None
    assert result.not_judged is not None and "which may have been an input" in result.not_judged
    assert f"line {index + 2}" in result.not_judged


def test_a_journal_from_before_the_flow_neutral_defaults_replays_clean_under_the_defaults_it_was_recorded_with(tmp_path):
    # Journals recorded before `ladder_defaults` was written hold a flow document whose
    # empty ladder took the first defaults (the reference-code wording, a 120 s bound):
    # recorded here as such a call was, then replayed from its header alone.
    from ladder.flow.compile import compile_flow
    from ladder.flow.spec import FlowSpec
    from sessions.flowfiles import library_flow_path
    from sessions.scenarios import Simulation

    document = json.loads(library_flow_path("reference_code").read_text())
    document["ladder"] = {}
    del document["slots"]["reference_code"]["label"]
    path = next(p for p in SCENARIOS if p.stem == "default_silence_to_safe_close")
    sim = Simulation(load_scenario(path), compile_flow(FlowSpec.model_validate(document), ladder_defaults=1))
    sim.run()
    header = {"source": "scenario", "scenario": "old", "flow": "reference_code", "flow_document": document,
              "models": {}, "devices": {"output": "simulated endpoint", "clock": "virtual"}}
    sim.call.write_journal(tmp_path / "s", header, redact=sim.runtime.redact)
    said = [r.get("text") for r in read_journal(tmp_path / "s").decisions() if r.get("effect") == "RequestPrompt"]
    assert "If the code isn't to hand, we can carry on without it, or I can repeat the question." in said
    result = replay(tmp_path / "s")
    assert result.verdict == "CLEAN", result.describe()
    journal = tmp_path / "s" / "journal.jsonl"
    lines = journal.read_text().splitlines()
    header = json.loads(lines[0])  # as written: type, schema, created
    assert "ladder_defaults" not in header
    # read with today's defaults the same document speaks differently: the field matters
    header["ladder_defaults"] = 2
    journal.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    assert replay(tmp_path / "s").verdict == "DRIFT"
    header["ladder_defaults"] = 7
    journal.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    with pytest.raises(Exception, match="ladder_defaults.*1, 2, 3"):
        replay(tmp_path / "s")
