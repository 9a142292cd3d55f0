"""The voice edge's observations in the console: the slot-aware end-of-turn decisions and
each answered turn's perceived wait, as readable lines (never markup), on the rehearse
screen's event log and media line and at the cursor of the sessions screen."""

import asyncio
import functools

from console_fixtures import Clock, SilentBackend, compile_data, quick_flow_data

from console.app import LullApp
from console.describe import describe
from console.widgets import EventLog
from ladder import PlaybackCompleted, PlaybackStarted

SIZES = [(80, 24), (100, 30), (160, 48)]

END_NOW = {"turn": "heard-3", "decision": "end_now", "reason": "complete_value", "pause_ms": 250.0}
HOLD_OPEN = {"turn": "heard-2", "decision": "hold_open", "reason": "partial_value", "hold_ms": 2500}


def latency(turn: str, gap: float | None, **extra) -> dict:
    """A turn_latency record with the fields TurnLatency.as_dict writes."""
    return {
        "turn": turn, "audio_s": 1.2, "perceived_gap_ms": gap, "vad_lag_ms": 20.0, "hold_ms": 250.0,
        "eos_to_transcript_ms": 5.0, "transcript_to_decision_ms": 2.0, "decision_to_first_audio_ms": 140.0,
        "leading_silence_ms": 12.0, "eos_to_first_audio_ms": 300.0, "stt_decode_ms": 180.0,
        "end_of_turn": "complete_value", "speculative": True, **extra,
    }


def run_async(test):
    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        asyncio.run(test(*args, **kwargs))

    return wrapper


def make_app(journal_dir=None):
    data = quick_flow_data()
    clock = Clock()
    backend = SilentBackend()
    app = LullApp(compile_data(data), flow_document=data, backend=backend, clock=clock, journal_dir=journal_dir,
                  backend_factory=SilentBackend)
    return app, backend, clock


def play_out(app, backend, clock):
    done = getattr(backend, "done", set())
    backend.done = done
    for prompt in list(backend.spoken):
        if prompt.token not in done and prompt.token not in backend.cancelled:
            done.add(prompt.token)
            app.session.feed(PlaybackStarted(prompt.token))
            clock.advance(0.5)
            app.session.feed(PlaybackCompleted(prompt.token))


def log_lines(app) -> list[str]:
    return app.screen.query_one(EventLog).shown()


def media(app) -> str:
    return str(app.screen.query_one("#media").render())


def test_the_decisions_read_as_plain_words():
    assert describe({"effect": "Observation", "kind": "end_of_turn", **END_NOW}) == (
        "turn heard-3: pause 250 ms holds a complete value -> end of turn now"
    )
    assert describe({"effect": "Observation", "kind": "end_of_turn", **HOLD_OPEN}) == (
        "turn heard-2: partial value -> holding the turn open up to 2500 ms"
    )
    line = describe({"effect": "Observation", "kind": "turn_latency", **latency("heard-3", 620.0)})
    assert line == (
        "turn heard-3: caller waited 0.62 s (ended on a complete value; hold 250 ms, "
        "words 5 ms from the early decode, decision 2 ms, to first sample 140 ms)"
    )
    unmeasured = describe({"effect": "Observation", "kind": "turn_latency", **latency("heard-4", None)})
    assert unmeasured.startswith("turn heard-4: answered (wait not measured)")
    # media figures and masked spans stay out of the event log, as before
    assert describe({"effect": "Observation", "kind": "echo_path", "aec": True}) is None


@run_async
async def test_end_of_turn_decisions_and_the_perceived_wait_show_on_the_rehearse_screen():
    for size in SIZES:
        app, backend, clock = make_app()
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            for _ in range(3):  # greeting, disclosure, question
                play_out(app, backend, clock)
            await pilot.pause()
            assert "wait " not in media(app)  # no answered turn yet: no figure
            clock.advance(1.0)
            app.session.note("end_of_turn", HOLD_OPEN)
            clock.advance(1.0)
            app.session.note("end_of_turn", END_NOW)
            app.session.note("turn_latency", latency("heard-3", 620.0))
            await pilot.pause()
            lines = log_lines(app)
            assert any(line.endswith("turn heard-2: partial value -> holding the turn open up to 2500 ms") for line in lines), lines
            assert any(line.endswith("turn heard-3: pause 250 ms holds a complete value -> end of turn now") for line in lines), lines
            assert any("turn heard-3: caller waited 0.62 s (ended on a complete value" in line for line in lines), lines
            assert "wait 0.62 s (median 0.62 s)" in media(app)

            app.session.note("turn_latency", latency("heard-5", 800.0, end_of_turn="partial_value_hold", speculative=False))
            app.session.note("turn_latency", latency("heard-6", None))  # not measured: no figure change
            app.session.note("turn_latency", latency("heard-7", 300.0, end_of_turn="hold"))
            await pilot.pause()
            assert "wait 0.30 s (median 0.62 s)" in media(app)
            lines = log_lines(app)
            assert any("turn heard-5: caller waited 0.80 s (held longer for a partial value; hold 250 ms, words 5 ms," in line for line in lines)
            assert any("turn heard-7: caller waited 0.30 s (ended after the end-of-speech hold" in line for line in lines)

            # every word of the media line is on screen, whole, at this size
            shown = "\n".join(line.rstrip() for line in _screen_text(app))
            for word in ("wait", "0.30", "(median", "0.62", "s)"):
                assert word in shown.split(), (size, word)

            # the filter finds them, the why panel explains them
            await pilot.click("#log-filter")
            await pilot.press(*"holding", "enter")
            await pilot.pause()
            assert [line.split("] ", 1)[1] for line in log_lines(app)] == [
                "turn heard-2: partial value -> holding the turn open up to 2500 ms"
            ]
            log = app.screen.query_one(EventLog)
            _, _, now, record, index = next(e for e in log.lines if "holding" in e[1])
            log.post_message(EventLog.Chosen(now, record, index))
            await pilot.pause()
            why = str(app.screen.query_one("#why").shown_text)
            assert "slot-aware end of turn" in why

            assert await app.restart_call()  # a new call: a new median
            await pilot.pause()
            assert "wait " not in media(app)


@run_async
async def test_record_text_is_never_markup():
    app, backend, clock = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        app.session.note("end_of_turn", {**END_NOW, "turn": "[bold]x[/bold]"})
        await pilot.pause()
        assert any("turn [bold]x[/bold]: pause 250 ms" in line for line in log_lines(app))


@run_async
async def test_the_sessions_screen_shows_the_same_lines_at_the_cursor(tmp_path):
    recordings = tmp_path / "recordings"
    app, backend, clock = make_app(journal_dir=recordings / "take1")
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        play_out(app, backend, clock)
        clock.advance(1.0)
        app.session.note("end_of_turn", END_NOW)
        app.session.note("turn_latency", latency("heard-3", 620.0))
        play_out(app, backend, clock)
        await pilot.pause()
    journal = (recordings / "take1" / "journal.jsonl").read_text().splitlines()
    assert any('"end_of_turn"' in line for line in journal)

    viewer, _, _ = make_app()
    viewer.recordings_dir = recordings
    async with viewer.run_test(size=(120, 36)) as pilot:
        await pilot.press("f12")
        await pilot.pause()
        screen = viewer.screen
        screen.open(screen.folders[0])
        seen = []
        for _ in range(len(screen.cursor)):
            seen += [str(entry) for entry in screen.query_one("#session-log").entries]
            await pilot.press("right")
            await pilot.pause()
        seen += [str(entry) for entry in screen.query_one("#session-log").entries]
        assert "  observed: turn heard-3: pause 250 ms holds a complete value -> end of turn now" in seen, seen
        assert any(line.startswith("  observed: turn heard-3: caller waited 0.62 s") for line in seen), seen
        assert sum("pause 250 ms" in line for line in seen) == 1  # at one cursor position, once


def _screen_text(app) -> list[str]:
    """The whole screen as text lines (what a terminal shows)."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def test_a_route_switched_off_names_the_route():
    """The event stream said "route availability: unavailable" without saying which."""
    from ladder import Controller, LadderPolicy, SetRouteAvailability
    from sessions.virtual import flatten

    policy = LadderPolicy()
    route = next(r.id for r in policy.routes)
    core = Controller(policy)
    lines = [describe(flatten(e, 1.0)) for e in core.handle(SetRouteAvailability(route, False), 1.0)]
    assert f"route {route}: unavailable" in lines
