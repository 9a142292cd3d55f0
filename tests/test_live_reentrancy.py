"""Inputs an edge produces while effects execute, and tools that never answer.

A backend may report an interruption from inside `cancel()`; the session must feed
it after the decisions it followed, with its own time, so the journal's clock never
goes backwards and the recording replays CLEAN (S2, S6).
"""

import asyncio
import threading

import pytest
from console_fixtures import Clock, SilentBackend, compile_data, quick_flow_data

from console.headless import rehearse_headless
from sessions.live import LiveSession
from voices.backends.text import TextBackend
from ladder import PlaybackCompleted, PlaybackInterrupted, PlaybackStarted, StartCall, TransportFailed
from sessions.journal import read_journal
from sessions.replay import replay
from sessions.virtual import flatten


def flat(effect):
    return flatten(effect, 0)


QUESTION = "What is your reference code?"


def rehearse(lines, journal_dir, flow_data=None, when_asked=False):
    """A headless text call; with `when_asked`, the lines wait until the question plays."""
    asked = threading.Event()

    def on_line(who, text):
        if who == "agent" and text == QUESTION:
            asked.set()

    def script():
        if when_asked:
            assert asked.wait(20), "the question never played"
        yield from lines

    backend = TextBackend(ms_per_word=150, start_delay_ms=10, on_line=on_line)
    session = LiveSession(compile_data(flow_data or quick_flow_data()), backend, journal_dir=journal_dir)
    outcome = asyncio.run(
        asyncio.wait_for(
            rehearse_headless(session, backend.say, lines=script(), write=lambda line: None, speaking=lambda: backend.speaking),
            timeout=30,
        )
    )
    return outcome, session


def assert_recorded_cleanly(folder):
    journal = read_journal(folder)
    assert journal.skipped == [], journal.skipped
    times = [r["t_ms"] for r in journal.records]
    assert times == sorted(times), "the journal's clock went backwards"
    result = replay(folder)
    assert result.verdict == "CLEAN", result.describe()
    return journal


@pytest.mark.parametrize(
    "incident",
    ["/fail input", "/fail output", "/fail recognizer", "/hangup"],
)
def test_an_incident_that_cuts_a_playing_prompt_is_recorded_and_replays_clean(tmp_path, incident):
    # the question is playing: the incident cuts it, and more effects follow
    outcome, session = rehearse(["/sleep 0.1", incident, "/sleep 0.3", "/hangup"], tmp_path / "take", when_asked=True)
    assert session.closed.is_set() and outcome is not None
    journal = assert_recorded_cleanly(tmp_path / "take")
    kinds = [r["kind"] for r in journal.inputs()]
    assert "playback_interrupted" in kinds  # the cut is an input, after the cancel


def test_an_interruption_reported_from_inside_cancel_is_fed_after_the_cancel():
    class ReportingBackend(SilentBackend):
        def cancel(self, token):
            super().cancel(token)
            self.session.feed(PlaybackInterrupted(token))  # at once, from inside the effect loop

    clock = Clock()
    backend = ReportingBackend()
    session = LiveSession(compile_data(quick_flow_data()), backend, clock=clock)
    records = []
    session.listeners.append(lambda now, kind, record: records.append((now, kind, record)))
    session.feed(StartCall())
    for _ in range(2):  # the greeting and the disclosure play in full
        token = backend.spoken[-1].token
        session.feed(PlaybackStarted(token))
        clock.t += 0.5
        session.feed(PlaybackCompleted(token))
    token = backend.spoken[-1].token
    assert backend.spoken[-1].text == QUESTION
    session.feed(PlaybackStarted(token))
    clock.t += 0.1
    effects = session.feed(TransportFailed("input", "injected"))
    assert type(effects[-1]).__name__ != "CancelPrompt"  # more effects follow the cancel
    assert backend.cancelled == [token]
    kinds = [(kind, r.get("kind") or r.get("effect")) for _, kind, r in records]
    cancel = kinds.index(("decision", "CancelPrompt"))
    interrupted = kinds.index(("input", "playback_interrupted"))
    assert interrupted > cancel
    # every decision of the failure comes before the interruption's input
    failed_at = kinds.index(("input", "transport_failed"))
    assert kinds[failed_at + 1 : interrupted] == [("decision", r.get("kind") or r.get("effect")) for r in map(flat, effects)]
    times = [now for now, _, _ in records]
    assert times == sorted(times)


def test_a_tool_that_never_answers_times_out_as_unknown_and_the_call_ends(tmp_path):
    data = quick_flow_data()
    data["tools"][0]["latency_ms"] = 3_600_000  # an hour: it will never answer in time
    data["tools"][0]["timeout_ms"] = 600
    outcome, session = rehearse(["4 8 2 1", "yes"], tmp_path / "take", data)
    assert session.closed.is_set()
    calls = list(session.runtime.calls.values())
    assert [c.status for c in calls] == ["unknown"]
    journal = assert_recorded_cleanly(tmp_path / "take")
    results = [r for r in journal.inputs() if r["kind"] == "tool_result"]
    assert results and results[0]["event"]["outcome"] == "unknown"
    assert results[0]["event"]["result"] == {"timed_out_after_ms": 600}


def test_an_observation_made_while_effects_execute_is_journaled_after_them(tmp_path):
    # a listener that notes something about a decision (the masked-audio marker does)
    # while time passes must not put a later time before the step's own decisions
    clock = Clock()
    backend = SilentBackend()
    session = LiveSession(compile_data(quick_flow_data()), backend, clock=clock, journal_dir=tmp_path / "take")

    def observe(now, kind, record):
        if record.get("effect") == "RequestPrompt":
            clock.t += 0.002  # the listener's work takes a moment
            session.note("observed_prompt", {"token": record["token"]})

    session.listeners.append(observe)

    async def call():
        await session.start()
        for _ in range(3):
            token = backend.spoken[-1].token
            session.feed(PlaybackStarted(token))
            clock.t += 0.5
            session.feed(PlaybackCompleted(token))
        await session.stop()

    asyncio.run(call())
    journal = assert_recorded_cleanly(tmp_path / "take")
    assert not any("clock_behind_ms" in r for r in journal.records)
    assert sum(1 for r in journal.records if r.get("kind") == "observed_prompt") == 3
