"""Issue 12, the console at a real terminal: each listed bug has a Pilot test here.

A silent backend and a hand-driven clock: every run draws the same thing.
"""

import asyncio
import functools
import json
import re
import shutil

import pytest
from console_fixtures import Clock, SilentBackend, compile_data, quick_flow_data

from console.app import LullApp, console_notice
from console.screens.rehearse import panel_text
from ladder import PlaybackCompleted, PlaybackStarted
from sessions.flowfiles import library_flow_path

SIZES = [(80, 24), (100, 30), (120, 36), (160, 48)]
LONG = "Take your time. Would you like more time, or shall I repeat the question?"


def run_async(test):
    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        asyncio.run(test(*args, **kwargs))

    return wrapper


def make_app(tmp_path=None, flow_path=None, data=None, journal=False):
    data = data or quick_flow_data()
    if flow_path is not None and not flow_path.exists():
        flow_path.write_text(json.dumps(data, indent=2))
    clock = Clock()
    backend = SilentBackend()
    app = LullApp(
        compile_data(data),
        flow_path=flow_path,
        flow_document=data,
        backend=backend,
        clock=clock,
        journal_dir=(tmp_path / "take") if journal else None,
        incident_dir=(tmp_path / "incidents") if tmp_path else None,
        recordings_dir=(tmp_path / "recordings") if tmp_path else None,
        notice="Text backend: type the caller's turns below.",
        backend_factory=SilentBackend,
    )
    return app, backend, clock


def play_out(app, clock, seconds=0.5):
    backend = app.backend
    done = backend.__dict__.setdefault("done", set())
    for prompt in list(backend.spoken):
        if prompt.token in done or prompt.token in backend.cancelled:
            continue
        done.add(prompt.token)
        app.session.feed(PlaybackStarted(prompt.token))
        clock.advance(seconds)
        app.session.feed(PlaybackCompleted(prompt.token))


def wait(app, clock, seconds):
    clock.advance(seconds)
    app.session._on_timer()


async def to_question(app, clock, pilot):
    await pilot.pause()
    for _ in range(3):
        play_out(app, clock)
    await pilot.pause()


def long_reminder_flow():
    data = quick_flow_data()
    data["ladder"]["stages"][1]["prompt"] = LONG
    data["ladder"]["stages"][1]["wait_ms"] = 6000
    return data


def squash(text: str) -> str:
    return " ".join(text.split())


# -- lost or cut -------------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@run_async
async def test_a_wrapped_transcript_line_keeps_every_word(size):
    app, backend, clock = make_app(data=long_reminder_flow())
    async with app.run_test(size=size) as pilot:
        await to_question(app, clock, pilot)
        wait(app, clock, 0.45)  # the gentle check is spoken
        play_out(app, clock)
        await pilot.pause()
        transcript = app.screen.query_one("#transcript")
        width = transcript.scrollable_content_region.width
        lines = transcript.text_lines()
        assert all(len(line) <= width for line in lines), (width, lines)
        assert LONG in squash(" ".join(lines))
        await pilot.resize_terminal(size[0] + 17, size[1])  # a resize lays the lines out again
        await pilot.pause()
        await pilot.pause()
        lines = transcript.text_lines()
        assert all(len(line) <= transcript.scrollable_content_region.width for line in lines)
        assert LONG in squash(" ".join(lines))


@run_async
async def test_what_happens_on_another_screen_is_in_the_transcript_and_log_on_return():
    app, backend, clock = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("f2")
        await pilot.pause()
        for _ in range(3):
            play_out(app, clock)  # the greeting, the disclosure and the question, while F2 shows
        wait(app, clock, 0.45)
        await pilot.press("f1")
        await pilot.pause()
        transcript = squash(" ".join(app.screen.query_one("#transcript").text_lines()))
        assert "This call may be recorded" in transcript and "What is your reference code?" in transcript
        log = "\n".join(app.screen.query_one("#log").shown())
        assert "prompt #2 completed" in log and "ladder -> gentle_check" in log


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@run_async
async def test_every_panel_is_reachable_and_the_transcript_has_room(size):
    app, backend, clock = make_app()
    async with app.run_test(size=size) as pilot:
        await to_question(app, clock, pilot)
        screen = app.screen
        assert screen.query_one("#transcript").size.height >= 5
        assert screen.query_one("#log").outer_size.height >= 6  # the filter and three lines at least
        right = screen.query_one("#right")
        for panel in ("#ladder", "#timers", "#prompts", "#timeline", "#routes", "#why"):
            widget = screen.query_one(panel)
            right.scroll_to_widget(widget, animate=False, top=True)
            await pilot.pause()
            region = widget.region
            assert region.height > 0 and region.y >= 1 and region.y < size[1] - 1, (panel, region)


@run_async
async def test_the_event_log_grows_with_the_terminal():
    app, backend, clock = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert app.screen.query_one("#log").size.height > 12


@run_async
async def test_every_binding_is_in_the_footer_at_80_and_160_and_in_the_help_at_80():
    every = {f"f{n}" for n in range(1, 11)} | {"f12", "^q", "^r", "^p"}
    for width, height in ((80, 24), (160, 48)):
        app, backend, clock = make_app()
        async with app.run_test(size=(width, height)) as pilot:
            await pilot.pause()
            keys = [k for k in app.screen.query("FooterKey") if k.region.width]
            assert every <= {k.key_display for k in keys if k.region.right <= width}, width
    app, backend, clock = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("f1")
        await pilot.pause()
        help_text = str(app.screen.query_one("#help-text").render())
        for key in ("f4", "f5", "f6", "f7", "f8", "f9", "f10", "f12", "^q", "^r", "^p"):
            assert re.search(rf"^\s*{re.escape(key)}\s", help_text, re.M), key


@run_async
async def test_the_routes_panel_shows_offered_and_taken():
    app, backend, clock = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await to_question(app, clock, pilot)
        wait(app, clock, 0.45)
        play_out(app, clock)
        wait(app, clock, 0.45)  # the alternative route is offered
        await pilot.pause()
        label = str(app.screen.query_one("#route-label-continue_without_code").render())
        assert "[offered]" in label


# -- keys and focus ------------------------------------------------------------------------


@run_async
async def test_f6_saves_while_the_wording_box_has_focus(tmp_path):
    path = tmp_path / "mine.json"
    app, backend, clock = make_app(tmp_path, flow_path=path)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("f2")
        await pilot.pause()
        editor = app.screen
        editor.select(next(i for i in editor.items if i.key == "stage:greet"))
        area = editor.query_one("#prompt-text")
        area.focus()
        area.text = "Good morning, reference desk."
        await pilot.pause()
        await pilot.press("f6")
        await pilot.pause()
    assert json.loads(path.read_text())["stages"][0]["say"] == "Good morning, reference desk."


@run_async
async def test_typing_at_start_goes_to_the_caller_box_and_never_flips_a_route():
    app, backend, clock = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await to_question(app, clock, pilot)
        assert app.screen.focused is app.screen.query_one("#caller")
        for switch in app.screen.query("RouteSwitch"):
            assert not switch.can_focus
        app.screen.query_one("#right").focus()
        before = {s.id: s.value for s in app.screen.query("RouteSwitch")}
        await pilot.press(*"4 8 2 1")
        await pilot.pause()
        assert app.screen.query_one("#caller").value == "4 8 2 1"
        assert {s.id: s.value for s in app.screen.query("RouteSwitch")} == before


@pytest.mark.parametrize("query,title", [("fail", "Fail the input path"), ("route", "Route"), ("hang", "Hang up"), ("restart", "Restart")])
@run_async
async def test_the_command_palette_finds_lull_commands(query, title):
    from textual.command import CommandList

    app, backend, clock = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*query)
        for _ in range(20):
            await pilot.pause(0.05)
            found = app.screen.query_one(CommandList)
            prompts = [str(found.get_option_at_index(i).prompt) for i in range(found.option_count)]
            if any(title in p for p in prompts):
                break
        assert any(title in p for p in prompts), prompts


@run_async
async def test_after_f6_the_list_keeps_its_place_and_down_moves_on(tmp_path):
    path = tmp_path / "mine.json"
    app, backend, clock = make_app(tmp_path, flow_path=path)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("f2")
        await pilot.pause()
        editor = app.screen
        view = editor.query_one("#prompt-list")
        view.focus()
        for _ in range(3):
            await pilot.press("down")
        await pilot.pause()
        third = editor.current
        assert view.index == 3
        editor.query_one("#prompt-text").text = third.text + " Thanks."
        await pilot.pause()
        view.focus()
        await pilot.press("f6")
        await pilot.pause()
        assert view.index == 3 and editor.current.key == third.key
        await pilot.press("down")
        await pilot.pause()
        assert view.index == 4 and editor.current.key == editor.items[4].key


# -- wrong or stale ------------------------------------------------------------------------


@run_async
async def test_saving_a_ladder_prompt_changes_only_what_it_must(tmp_path):
    path = tmp_path / "mine.json"
    shutil.copy(library_flow_path("reference_code"), path)
    original = path.read_text()
    data = json.loads(original)
    app, backend, clock = make_app(tmp_path, flow_path=path, data=data)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("f2")
        await pilot.pause()
        editor = app.screen
        editor.select(next(i for i in editor.items if i.key == "ladder:gentle_check"))
        editor.query_one("#prompt-text").text = "No rush at all."
        await pilot.pause()
        await pilot.press("f6")
        await pilot.pause()
    saved = path.read_text()
    assert json.loads(saved)["ladder"]["stages"][1]["prompt"] == "No rush at all."
    # every line of the file is still there, in order: the stage list was inserted into "ladder": {}
    old_lines, new_lines = original.splitlines(), saved.splitlines()
    kept = [line for line in new_lines if line in old_lines or line.replace('"ladder": {', '"ladder": {}') in old_lines]
    assert len(kept) >= len(old_lines) - 1
    assert len(new_lines) - len(old_lines) < 60  # the stage list, not a re-serialised file (83 -> 238)
    head = original.split('"ladder"')[0]
    assert saved.startswith(head)


@run_async
async def test_the_hold_budget_bar_moves_during_the_hold_and_the_ladder_waits():
    app, backend, clock = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await to_question(app, clock, pilot)
        app.say("give me a moment")
        play_out(app, clock)  # the acknowledgement: the hold starts at its completion
        clock.advance(0.3)
        app.screen.refresh_panels()
        await pilot.pause()
        ladder = panel_text(app.screen.query_one("#ladder"))
        assert "0.3/1.2s" in ladder
        assert "▶" not in ladder and "⏸" in ladder and "on hold" in ladder


@run_async
async def test_a_lost_completion_ends_on_the_estimate_and_nothing_stays_started():
    app, backend, clock = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        for _ in range(2):
            play_out(app, clock)  # the greeting and the disclosure
        app.backend.done.add(3)
        app.session.feed(PlaybackStarted(3))  # the question starts; its completion never comes
        clock.advance(6.0)
        app.session._on_timer()
        await pilot.pause()
        app.screen.refresh_panels()
        lane = panel_text(app.screen.query_one("#prompts"))
        assert "completed (estimated" in lane
        await pilot.press("f10")  # hang up: the call closes
        await pilot.pause()
        app.screen.refresh_panels()
        lane = panel_text(app.screen.query_one("#prompts"))
        assert not re.search(r"\bstarted\b(?!,)", lane.replace("started,", "")), lane


@run_async
async def test_the_incidents_screen_shows_no_countdown_after_the_run():
    app, backend, clock = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("f3")
        await pilot.pause()
        screen = app.screen
        screen.choose(next(i for i in screen.incidents if i.name == "seven_waits"))
        await pilot.press("f4")
        await pilot.pause()
        timers = panel_text(screen.query_one("#inc-timers"))
        assert "watchdog" in timers and "never fire" in timers and "due" in timers
        assert not re.search(r"gen \d+ +\d+s", timers)  # a countdown would read "gen 23 4s"


@run_async
async def test_the_sessions_screen_speaks_plain_words_and_shows_changed_wording(tmp_path):
    from pathlib import Path

    from sessions.scenarios import load_scenario, run_scenario

    scenario = Path(__file__).parent / "scenarios" / "default_silence_to_safe_close.json"
    run_scenario(load_scenario(scenario), scenario, record_to=tmp_path / "recordings" / "take1")
    data = json.loads(library_flow_path("reference_code").read_text())
    app, backend, clock = make_app(tmp_path, data=data)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("f2")
        await pilot.pause()
        editor = app.screen
        editor.select(next(i for i in editor.items if i.key == "ladder:gentle_check"))
        editor.query_one("#prompt-text").text = "No rush. Shall I say it again?"
        await pilot.pause()
        await pilot.press("f5")
        await pilot.press("f12")
        await pilot.pause()
        screen = app.screen
        screen.open(screen.folders[0])
        for _ in range(8):
            await pilot.press("right")
        await pilot.pause()
        log = "\n".join(str(e) for e in screen.query_one("#session-log").entries)
        assert "{'kind'" not in log and "input: " in log
        await pilot.press("f6")
        await pilot.pause()
        log = "\n".join(str(e) for e in screen.query_one("#session-log").entries)
        assert "CHANGED (wording)" in log or "CHANGED" in log
        assert "No rush. Shall I say it again?" in log


def test_the_notice_does_not_send_the_text_backend_to_the_text_backend():
    notice = console_notice(
        "Text backend: no audio: there is no default input device; run `lull rehearse --backend text` to rehearse without audio"
    )
    assert "--backend text" not in notice and "no default input device" in notice


@run_async
async def test_a_toast_speaks_the_consoles_words_not_headless_syntax():
    app, backend, clock = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("f6")  # no timer has fired yet
        await pilot.pause()
        messages = [n.message for n in app._notifications]
        assert messages and not any(m.startswith("/") for m in messages), messages


@run_async
async def test_idle_panels_are_not_redrawn():
    app, backend, clock = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await to_question(app, clock, pilot)
        await pilot.press("f10")  # the call closes: nothing will happen any more
        await asyncio.wait_for(app.session.closed.wait(), 5)
        await pilot.pause()
        screen = app.screen
        screen.refresh_panels()
        panels = [screen.query_one(w) for w in ("#ladder", "#timers", "#prompts", "#timeline")]
        before = [p.updates for p in panels]
        for _ in range(10):  # ten ticks of the once-a-second refresh, clock still
            screen.refresh_panels()
            await pilot.pause()
        assert [p.updates for p in panels] == before
        # and no fast timer is left: the panels' interval is one second
        intervals = [t._interval for t in screen._timers if t.name != "screen_update"]  # textual's own, paused
        assert intervals and min(intervals) >= 0.25


def test_timer_names_and_origins_are_never_cut_mid_word():
    # at 100x30 "playback_estimate" came out as "playback_estimat" / "e"
    from rich.console import Console

    from console.widgets.lanes import _grid, timer_lines

    snapshot = {"timers": {"playback_estimate": {"due": 9000, "generation": 4, "origin": "estimate_from_start"}}}
    rows, _ = timer_lines(snapshot, 5000, [])
    table = _grid("timer", "gen", "left", "origin", wrap="origin")
    for kind, gen, when, origin, _ in rows:
        table.add_row(kind, gen, when, origin)
    console = Console(width=40, record=True)
    console.print(table)
    lines = console.export_text().splitlines()
    assert lines[0].startswith("playback_estimate gen 4 4s")
    assert "estimate from start" in " ".join(" ".join(line.split()) for line in lines)
    # the timer lane at 80x24 is 35 cells wide: the origin's column would have six, so
    # the origin goes on a line of its own, whole
    from console.widgets.lanes import timer_table

    two = {**snapshot["timers"], "deadline": {"due": 150000, "generation": 2, "origin": "episode_start"}}
    rows, _ = timer_lines({"timers": two}, 5000, [])
    for width in (35, 30):
        narrow = Console(width=width, record=True)
        narrow.print(timer_table(rows, width))
        text = narrow.export_text().splitlines()
        assert [line.split() for line in text] == [["playback_estimate", "gen", "4", "4s"], ["estimate", "from", "start"],
                                                   ["deadline", "gen", "2", "145s"], ["from", "episode", "start"]], text
    wide = Console(width=80, record=True)
    wide.print(timer_table(rows, 80))
    assert wide.export_text().splitlines()[0].split() == ["playback_estimate", "gen", "4", "4s", "estimate", "from", "start"]


@run_async
async def test_a_code_answer_reads_as_an_answer_with_no_intent_noise():
    app, backend, clock = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await to_question(app, clock, pilot)
        backend.say("4 8 2 1")
        await pilot.pause()
        app.screen.refresh_panels()
        await pilot.pause()
        transcript = squash(" ".join(app.screen.query_one("#transcript").text_lines()))
        assert "→ answer" in transcript and "(unclear)" not in transcript, transcript
