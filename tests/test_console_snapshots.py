"""Snapshots of every console screen at the four terminal sizes, on fixed data.

80x24, 100x30, 120x36 and 160x48; a hand-driven clock and a silent backend, so nothing
drawn depends on real time. Regenerate after an intended change with:
pytest tests/test_console_snapshots.py --snapshot-update
"""

import json
from pathlib import Path

import pytest
from console_fixtures import Clock, SilentBackend, compile_data, quick_flow_data

from console.app import LullApp
from ladder import PlaybackCompleted, PlaybackStarted

SIZES = [(80, 24), (100, 30), (120, 36), (160, 48)]


async def settle(pilot) -> None:
    """Let layout, re-wrapping and queued redraws finish (a loaded machine is slower).

    Cursors stop blinking first: a blinking cursor is drawn or not depending on when the
    picture is taken, which a loaded machine shifts by a blink.
    """
    for widget in pilot.app.screen.query("Input, TextArea"):
        widget.cursor_blink = False
    for _ in range(4):
        await pilot.pause()
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()
SIZE_IDS = [f"{w}x{h}" for w, h in SIZES]


def make_app(tmp_path=None):
    data = quick_flow_data()
    clock = Clock()
    backend = SilentBackend()
    app = LullApp(
        compile_data(data),
        flow_document=data,
        backend=backend,
        clock=clock,
        notice="Text backend: type the caller's turns below.",
        recordings_dir=(tmp_path / "recordings") if tmp_path else None,
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
    clock.advance(0.3)  # part of the hold has run: the budget bar shows it


def recording(tmp_path: Path) -> Path:
    """A recorded session with its wall-clock fields fixed (they would differ per run)."""
    from sessions.scenarios import load_scenario, run_scenario

    scenario = Path(__file__).parent / "scenarios" / "default_hold_then_answer.json"
    folder = tmp_path / "recordings" / "take1"
    run_scenario(load_scenario(scenario), scenario, record_to=folder)
    journal = folder / "journal.jsonl"
    lines = []
    for line in journal.read_text().splitlines():
        record = json.loads(line)
        for key in ("created", "wall"):
            if key in record:
                record[key] = "2026-01-01T00:00:00+00:00"
        lines.append(json.dumps(record))
    journal.write_text("\n".join(lines) + "\n")
    return folder


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_rehearse_screen(snap_compare, size):
    app, backend, clock = make_app()

    async def run_before(pilot):
        await pilot.pause()
        drive_to_hold(app, backend, clock)
        await pilot.pause()
        app.screen.refresh_panels()
        await pilot.pause()
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_editor_screen(snap_compare, size):
    app, backend, clock = make_app()

    async def run_before(pilot):
        await pilot.pause()
        await pilot.press("f2")
        await pilot.pause()
        editor = app.screen
        editor.select(next(i for i in editor.items if i.key == "ladder:alternative_route"))
        editor.query_one("#prompt-text").text = "I can transfer you to a person, or we can carry on without it."
        await pilot.pause()
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_incidents_screen(snap_compare, size):
    app, backend, clock = make_app()

    async def run_before(pilot):
        await pilot.pause()
        await pilot.press("f3")
        await pilot.pause()
        screen = app.screen
        screen.choose(next(i for i in screen.incidents if i.name == "seven_waits"))
        for _ in range(6):
            await pilot.press("space")
        await pilot.pause()
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_sessions_screen(snap_compare, size, tmp_path):
    folder = recording(tmp_path)
    app, backend, clock = make_app(tmp_path)

    async def run_before(pilot):
        await pilot.pause()
        await pilot.press("f12")
        await pilot.pause()
        screen = app.screen
        screen.open(folder)
        screen.action_step(14)
        await pilot.pause()
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_help_screen(snap_compare, size):
    app, backend, clock = make_app()

    async def run_before(pilot):
        await pilot.pause()
        await pilot.press("f1")
        await pilot.pause()
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.fixture(scope="module")
def corpus_calls(tmp_path_factory):
    """40 simulated calls of the shipped flow (the same every run: seeded)."""
    from sessions.population import Population
    from sessions.simulate import simulate_corpus

    root = tmp_path_factory.mktemp("corpus")
    simulate_corpus(root / "calls", "reference_code", None, 40, 3, Population(), workers=1)
    return root


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_corpus_screen(snap_compare, size, corpus_calls, monkeypatch):
    from console.screens.rehearse import panel_text

    monkeypatch.chdir(corpus_calls)  # the folder is named as given: the same words every run
    app, backend, clock = make_app()
    app.corpus_dir = Path("calls")

    async def run_before(pilot):
        await pilot.pause()
        await pilot.press("f11")
        screen = app.screen
        for _ in range(400):  # the reading and the what-if run in workers
            await app.workers.wait_for_complete()
            await pilot.pause(0.05)
            if "the whole corpus" in panel_text(screen.query_one("#corpus-whatif")):
                break
        else:
            raise AssertionError("the corpus screen never finished reading")
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)
