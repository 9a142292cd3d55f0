"""A designer's own flow rehearsed live: a caller who asks for time hears still-waiting
lines at the cadence and is not closed before the hold budget is used; a partial answer
is acknowledged and completed. On the text backend (typed turns, the classifier the
voice backends use) and on the file backend (piper speech in, whisper and Silero out,
real time), each journaled and replayed CLEAN, the digits redacted."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from file_caller import speech, talk
from call_clock import heard_seconds
from call_clock import until as wait_until

from sessions.flowfiles import check_data
from sessions.journal import read_journal
from sessions.replay import replay

PHARMACY = Path(__file__).parent / "flows" / "pharmacy_refill.json"
CHECK_IN = "Are you still there? When you're ready, I can repeat the question."


def short_hold_flow():
    """The pharmacy flow with a hold short enough for a real-time test: a line every 3 s
    within a 12 s budget."""
    data = json.loads(PHARMACY.read_text())
    data["ladder"] = {"still_waiting_ms": 3000, "hold_budget_ms": 12000, "hold_ms": 12000}
    report = check_data(data, "pharmacy_refill")
    assert report.flow is not None, [p.line() for p in report.problems]
    return report.flow


def prompts(session, kind=None):
    ladder = session.runtime.ladder
    return [p for p in ladder.prompts.values() if kind is None or p.kind == kind]


def completed(session, kind):
    return [p for p in prompts(session, kind) if p.status.value == "completed"]


def said(session) -> list[str]:
    return [p.text for p in prompts(session) if p.status.value == "completed"]


def check_the_recording(folder, session):
    assert replay(folder).verdict == "CLEAN", replay(folder).describe()
    records = [json.loads(line) for line in (folder / "journal.jsonl").read_text().splitlines() if line.strip()]
    strings: list[str] = []

    def walk(value, key=None):
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, k)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, str) and key not in ("wall", "created"):  # the clocks' digits (a record's, the header's) are not the caller's
            strings.append(value)

    walk(records)
    text = "\n".join(strings)
    for form in ("447120", "4 4 7 1 2 0", "four four seven", "four, four, seven", "447", "1 2 0"):
        assert form not in text, form
    hold = [r for r in read_journal(folder).decisions() if r.get("kind") in ("still_waiting_armed", "hold_expired")]
    assert [r["kind"] for r in hold][:2] == ["still_waiting_armed", "still_waiting_armed"], hold


def test_on_the_text_backend_the_hold_keeps_company_and_a_partial_answer_is_acknowledged(tmp_path):
    from ladder.flow.understanding.shared_intents import flow_intents
    from sessions.live import LiveSession
    from voices.backends.text import TextBackend
    from voices.understanding.interpret import make_matcher
    from voices.virtual_loop import VirtualTimeLoop

    flow = short_hold_flow()
    # the classifier the voice backends use, trained before the call: on a busy machine its
    # build outlasts the ladder, and a typed turn waits for it while the windows run
    matcher = make_matcher(flow_intents(flow.spec), None, "classifier")
    backend = TextBackend(ms_per_word=60, start_delay_ms=10, matcher=matcher)
    # typed turns need no wall clock: the call runs on virtual time, its timers (3 s lines
    # in a 12 s hold) jumped to, the classifier's work in threads taking none of it
    loop = VirtualTimeLoop()
    session = LiveSession(flow, backend, journal_dir=tmp_path / "take", clock=loop.time)

    def until(predicate, timeout=40):  # virtual seconds: the call's own clock
        return wait_until(predicate, timeout, loop.time, why=lambda: said(session))

    async def body():
        try:
            await session.start()
            await until(lambda: session.runtime.asking == ("main", "ask_rx") and session.runtime.ladder.state.value == "listening")
            backend.say("hold on, I'm digging the bottle out of the cupboard")
            await until(lambda: any(p.text == CHECK_IN for p in completed(session, "reminder")), 40)
            assert session.runtime.ladder.state.value != "closed"
            backend.say("four four seven")
            await until(lambda: completed(session, "reminder")[-1:] and completed(session, "reminder")[-1].text.startswith("I've got the first"))
            backend.say("one two zero")
            await until(lambda: session.runtime.asking == ("main", "confirm_rx"))
        finally:
            await session.stop()

    try:
        loop.run_until_complete(body())
    finally:
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()
    lines = completed(session, "still_waiting")
    assert len(lines) == 2 and all(p.text == "I'm still here. Take your time." for p in lines)
    reminders = [p.text for p in completed(session, "reminder")]
    assert reminders == [CHECK_IN, "I've got the first three digits. What's the rest?"], reminders
    assert session.runtime.state["rx_number"] == "447120"
    check_the_recording(tmp_path / "take", session)


@pytest.fixture(scope="module")
def models(loaded_models):
    return loaded_models  # loaded once for the run (conftest)


def test_on_the_file_backend_a_spoken_caller_is_kept_company_then_gives_the_number_in_two_parts(models, tmp_path):
    import numpy as np
    import soundfile

    from sessions.live import LiveSession
    from voices.backends.file import FileBackend

    quiet = tmp_path / "quiet.wav"
    soundfile.write(quiet, np.zeros(1600, np.float32), 16000)
    backend = FileBackend(models, quiet)
    session = LiveSession(short_hold_flow(), backend, journal_dir=tmp_path / "take")

    def until(predicate, timeout=60):
        return wait_until(predicate, timeout, heard_seconds(backend), why=lambda: said(session))

    async def body():
        try:
            await session.start()
            await until(lambda: session.runtime.asking == ("main", "ask_rx") and session.runtime.ladder.state.value == "listening")
            talk(backend, speech(models, "Hold on, let me find the bottle."))
            await until(lambda: any(p.text == CHECK_IN for p in completed(session, "reminder")))
            talk(backend, speech(models, "four, four, seven."))
            await until(lambda: any(p.text.startswith("I've got the first") for p in completed(session, "reminder")))
            talk(backend, speech(models, "one, two, zero."))
            await until(lambda: session.runtime.asking == ("main", "confirm_rx"))
        finally:
            await session.stop()

    asyncio.run(body())
    assert len(completed(session, "acknowledgement")) == 1
    assert len(completed(session, "still_waiting")) == 2
    assert "I've got the first three digits. What's the rest?" in said(session)
    assert session.runtime.state["rx_number"] == "447120"
    assert session.runtime.ladder.state.value != "closed"
    check_the_recording(tmp_path / "take", session)
