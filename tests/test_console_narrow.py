"""What a designer saw at a real 80x24 terminal, fixed: a prompt's status cut mid-word,
event log lines wrapping under the time, a "yes" shown as the matcher's backchannel,
and the sessions screen's first Enter opening nothing."""

from pathlib import Path

from rich.console import Console
from textual.app import App, ComposeResult
from test_console import make_app, run_async

from console.describe import describe, how_read
from console.widgets.lanes import PromptLane
from console.widgets.log import _hanging
from sessions.scenarios import load_scenario, run_scenario


def rendered(renderable, width: int) -> list[str]:
    console = Console(width=width, record=True, color_system=None, file=open("/dev/null", "w"))
    console.print(renderable)
    return console.export_text().splitlines()


def prompt_snapshot(status: str = "completed") -> dict:
    prompts = [
        {"token": n, "kind": kind, "stage": stage, "status": status, "completion_estimated": False}
        for n, kind, stage in ((1, "statement", "greet"), (2, "question", "ask_code"),
                               (3, "reminder", "gentle_check"), (4, "reminder", "alternative_route"))
    ]
    return {"prompts": prompts, "state": "listening"}


class LaneAlone(App):
    """The prompt lane on its own: the console's live call would redraw it from its
    own snapshot between the test's show and its read (seen on a busy machine)."""

    def compose(self) -> ComposeResult:
        yield PromptLane()


@run_async
async def test_a_narrow_prompt_lane_puts_the_status_on_a_line_of_its_own():
    app = LaneAlone()
    async with app.run_test(size=(80, 24)) as pilot:
        lane = app.query_one(PromptLane)
        lane.styles.width = 38  # the right-hand column's width at 80x24
        await pilot.pause()
        lane.show(prompt_snapshot())
        await pilot.pause()
        text = lane.shown_text
        assert "completed" in text.split(), text  # whole, never "comp" / "lete" / "d"
        lane.styles.width = 76  # wide: beside the prompt again
        await pilot.pause()
        assert any("greet" in line and "completed" in line for line in lane.shown_text.splitlines())


def test_event_log_lines_wrap_under_their_words_not_under_the_time():
    lines = rendered(_hanging("[  7.7s] window armed gen 5 from observed, due 15.7s"), 30)
    assert len(lines) > 1
    assert lines[0].startswith("[  7.7s] window")
    assert all(line.startswith(" " * 9) for line in lines[1:] if line.strip()), lines


def test_a_yes_that_fills_the_slot_is_not_shown_as_the_matchers_backchannel():
    record = {"kind": "utterance", "reason": "answer", "matched": "backchannel", "score": 0.97}
    assert how_read(record) == " (a value for the pending question)"
    assert "backchannel" not in describe({**record, "effect": "Trace"})
    assert how_read({"reason": "wait_request", "matched": "wait_request", "score": 0.91}) == " (intent wait_request 0.91)"
    unused = how_read({"reason": "unclear", "matched": "ready", "score": 0.41})
    assert "ready" in unused and "not used" in unused
    # a route the matcher chose is what the turn was read as ("route" is the ladder's name)
    assert how_read({"reason": "route", "matched": "route:no_ref", "score": 0.05}) == " (intent route:no_ref 0.05)"


@run_async
async def test_the_first_enter_on_the_sessions_screen_opens_the_first_recording(tmp_path):
    scenario = Path(__file__).parent / "scenarios" / "default_hold_then_answer.json"
    run_scenario(load_scenario(scenario), scenario, record_to=tmp_path / "recordings" / "take1")
    app, _, _ = make_app(tmp_path)
    app.recordings_dir = tmp_path / "recordings"
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f12")
        await pilot.pause()
        screen = app.screen
        assert screen.cursor is None
        await pilot.press("enter")
        await pilot.pause()
        assert screen.cursor is not None and screen.cursor.journal.path.parent.name == "take1"


@run_async
async def test_a_resize_the_console_missed_is_laid_out_at_the_next_size_check(monkeypatch):
    import os

    app, _, _ = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        assert (app.size.width, app.size.height) == (80, 24)
        # the terminal grew, and no resize event came (a busy machine, a pane resized at start)
        monkeypatch.setattr(os, "get_terminal_size", lambda fd=None: os.terminal_size((160, 48)))
        app._check_terminal_size()
        await pilot.pause()
        await pilot.pause()
        assert (app.size.width, app.size.height) == (160, 48)
