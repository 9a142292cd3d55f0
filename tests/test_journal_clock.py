"""A live call is never lost over a clock disagreement: the journal holds the time (S6)."""

import asyncio

from console_fixtures import Clock, SilentBackend, compile_data, quick_flow_data

from sessions.live import LiveSession
from ladder import PlaybackCompleted, PlaybackStarted
from sessions.journal import read_journal
from sessions.replay import replay


def test_a_live_call_whose_clock_steps_back_is_journaled_and_replays_clean(tmp_path):
    clock, backend = Clock(), SilentBackend()
    session = LiveSession(compile_data(quick_flow_data()), backend, journal_dir=tmp_path / "take", clock=clock)

    async def body():
        await session.start()
        token = backend.spoken[-1].token
        session.feed(PlaybackStarted(token))
        clock.advance(0.5)
        session.feed(PlaybackCompleted(token))
        clock.advance(-0.004)  # a device's clock, converted, lands 4 ms behind the journal
        session.note("turn_latency", {"turn": "caller-1", "eos_to_first_audio_ms": 310.0})
        clock.advance(0.3)
        session.feed(PlaybackStarted(backend.spoken[-1].token))
        await session.stop()

    asyncio.run(body())
    journal = read_journal(tmp_path / "take")
    times = [r["t_ms"] for r in journal.records]
    assert journal.skipped == [] and times == sorted(times)
    assert any(r.get("kind") == "turn_latency" for r in journal.decisions())  # nothing was lost
    assert all(0 < ms <= 4.0 + 1e-6 for _, ms in journal.clock_behind)
    result = replay(tmp_path / "take")
    assert result.verdict == "CLEAN" and result.incomplete is None, result.describe()
