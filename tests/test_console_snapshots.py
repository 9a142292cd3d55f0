"""Snapshots of the three console screens at a fixed terminal size, on fixed data.

Regenerate after an intended change with: pytest tests/test_console_snapshots.py --snapshot-update
"""

from console_fixtures import Clock, SilentBackend, compile_data, quick_flow_data

from console.app import LullApp
from ladder import PlaybackCompleted, PlaybackStarted

SIZE = (140, 48)


def make_app():
    data = quick_flow_data()
    clock = Clock()
    backend = SilentBackend()
    app = LullApp(
        compile_data(data),
        flow_document=data,
        backend=backend,
        clock=clock,
        notice="Text backend: type the caller's turns below.",
    )
    return app, backend, clock


def drive_to_hold(app, backend, clock):
    """Greeting, disclosure and question played; a wait request; its acknowledgement played."""

    def play_new():
        for prompt in list(backend.spoken):
            if prompt.token not in played:
                played.add(prompt.token)
                app.session.feed(PlaybackStarted(prompt.token))
                clock.advance(0.5)
                app.session.feed(PlaybackCompleted(prompt.token))

    played: set[int] = set()
    for _ in range(3):
        play_new()
    backend.say("give me a moment")
    play_new()


def test_rehearse_screen(snap_compare):
    app, backend, clock = make_app()

    async def run_before(pilot):
        await pilot.pause()
        drive_to_hold(app, backend, clock)
        await pilot.pause()
        app.screen.refresh_panels()
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_editor_screen(snap_compare):
    app, backend, clock = make_app()

    async def run_before(pilot):
        await pilot.pause()
        await pilot.press("f2")
        await pilot.pause()
        editor = app.screen
        editor.select(next(i for i in editor.items if i.key == "ladder:alternative_route"))
        editor.query_one("#prompt-text").text = "I can transfer you to a person, or we can carry on without it."
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_incidents_screen(snap_compare):
    app, backend, clock = make_app()

    async def run_before(pilot):
        await pilot.pause()
        await pilot.press("f3")
        await pilot.pause()
        for _ in range(6):
            await pilot.press("space")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
