"""Issue 12, the designer's tools: restart keeping applied edits, timing edits, revert,
the timeline, the help screen and the "why" of a ladder move."""

import asyncio
import json

from console_fixtures import SilentBackend
from test_console_real_terminal import make_app, run_async, to_question, wait

from console.screens.help import HelpScreen
from console.screens.rehearse import panel_text
from sessions.journal import read_journal


async def edit(app, pilot, key: str, text: str, then: str | None = "f5"):
    await pilot.press("f2")
    await pilot.pause()
    editor = app.screen
    editor.select(next(i for i in editor.items if i.key == key))
    editor.query_one("#prompt-text").text = text
    await pilot.pause()
    if then:
        await pilot.press(then)
        await pilot.pause()
    return editor


@run_async
async def test_restart_keeps_applied_edits_and_starts_a_new_call(tmp_path):
    app, backend, clock = make_app(tmp_path, journal=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await to_question(app, clock, pilot)
        await edit(app, pilot, "ladder:gentle_check", "No rush. Do you need a little longer?")
        await pilot.press("f1")
        await pilot.press("ctrl+r")
        for _ in range(10):
            await pilot.pause()
        assert app.backend is not backend and app.session.runtime.ladder.snapshot()["prompts"]
        assert app.history.calls == 2
        await to_question(app, clock, pilot)
        wait(app, clock, 0.45)
        await pilot.pause()
        assert app.backend.spoken[-1].kind == "reminder"
        assert app.backend.spoken[-1].text == "No rush. Do you need a little longer?"
        transcript = " ".join(app.screen.query_one("#transcript").text_lines())
        assert "call 2: restarted" in transcript
        await pilot.press("ctrl+q")
    # the first call's journal is closed and whole; the second has its own folder
    assert read_journal(tmp_path / "take").records
    assert read_journal(tmp_path / "take-call2").records


@run_async
async def test_restart_is_in_the_palette():
    from console.commands import palette_commands

    app, backend, clock = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        titles = [title for title, _, _ in palette_commands(app)]
        assert any(t.startswith("Restart the call") for t in titles)


@run_async
async def test_a_stage_wait_is_edited_applied_and_saved_like_wording(tmp_path):
    path = tmp_path / "mine.json"
    app, backend, clock = make_app(tmp_path, flow_path=path, journal=True)
    original = path.read_text()
    async with app.run_test(size=(120, 36)) as pilot:
        await to_question(app, clock, pilot)
        editor = await edit(app, pilot, "wait:quiet_wait", "2000")
        assert app.session.runtime.flow.ladder.stages[0].wait_ms == 2000
        # a bad timing never reaches the call or the file
        editor.select(next(i for i in editor.items if i.key == "bound:hold_ms"))
        editor.query_one("#prompt-text").text = "soon"
        await pilot.pause()
        assert "is not a timing" in panel_text(editor.query_one("#prompt-lint"))
        await pilot.press("f5")
        await pilot.press("f6")
        await pilot.pause()
        assert app.session.runtime.flow.ladder.hold_ms == 600
        editor.query_one("#prompt-text").text = "900"
        await pilot.pause()
        await pilot.press("f6")  # saves the applied wait and this bound
        await pilot.pause()
        assert app.session.runtime.flow.ladder.hold_ms == 900
        await pilot.press("ctrl+q")
    saved = json.loads(path.read_text())
    assert saved["ladder"]["stages"][0]["wait_ms"] == 2000 and saved["ladder"]["hold_ms"] == 900
    expected = json.loads(original)
    expected["ladder"]["stages"][0]["wait_ms"] = 2000
    expected["ladder"]["hold_ms"] = 900
    assert saved == expected
    kinds = [r["event"]["path"] for r in read_journal(tmp_path / "take").records if r.get("kind") == "edit_wording"]
    assert ["ladder", "stages", 0, "wait_ms"] in kinds


@run_async
async def test_revert_goes_back_to_the_files_wording_then_the_shipped_one(tmp_path):
    path = tmp_path / "mine.json"
    app, backend, clock = make_app(tmp_path, flow_path=path)
    async with app.run_test(size=(120, 36)) as pilot:
        await to_question(app, clock, pilot)
        editor = await edit(app, pilot, "ladder:gentle_check", "Something else entirely.")
        assert app.session.runtime.flow.ladder.stages[1].prompt == "Something else entirely."
        await pilot.press("f7")  # back to the file's wording
        await pilot.pause()
        assert editor.query_one("#prompt-text").text == "Take your time."
        await pilot.press("f5")
        await pilot.pause()
        assert app.session.runtime.flow.ladder.stages[1].prompt == "Take your time."
        await pilot.press("f7")  # the file's is this test's; the shipped flow says more
        await pilot.pause()
        assert editor.query_one("#prompt-text").text.startswith("Take your time. Would you like more time")


@run_async
async def test_the_timeline_draws_a_reminder_overlapping_an_answer():
    app, backend, clock = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await to_question(app, clock, pilot)
        wait(app, clock, 0.45)  # the gentle check is requested...
        from ladder import PlaybackStarted

        app.backend.done.add(app.backend.spoken[-1].token)
        app.session.feed(PlaybackStarted(app.backend.spoken[-1].token))  # ...and plays
        clock.advance(0.2)
        app.say("4 8 2 1")  # the caller answers over it
        await pilot.pause()
        app.screen.refresh_panels()
        picture = panel_text(app.screen.query_one("#timeline")).splitlines()
        agent = next(row for row in picture if row.startswith("agent"))
        caller = next(row for row in picture if row.startswith("caller"))
        window = next(row for row in picture if row.startswith("window"))
        assert "g" in window and ("✕" in window or "┤" in window)
        assert "█" in agent and "▒" in caller
        # the reminder's playing and the caller's turn meet at the same moment on the axis
        cut = caller.index("▒")
        assert agent[cut - 1] in "█/" or agent[cut] in "█/"


@run_async
async def test_the_sessions_timeline_marks_the_cursor(tmp_path):
    from pathlib import Path

    from sessions.scenarios import load_scenario, run_scenario

    scenario = Path(__file__).parent / "scenarios" / "default_hold_then_answer.json"
    run_scenario(load_scenario(scenario), scenario, record_to=tmp_path / "recordings" / "take1")
    app, backend, clock = make_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("f12")
        await pilot.pause()
        screen = app.screen
        screen.open(screen.folders[0])
        screen.action_step(20)
        await pilot.pause()
        picture = panel_text(screen.query_one("#ses-picture"))
        assert "│ cursor" in picture and "window" in picture and "█" in picture


@run_async
async def test_help_opens_on_f1_twice_and_on_question_mark():
    app, backend, clock = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("f2")
        await pilot.press("f1")  # to the rehearse screen
        await pilot.press("f1")  # and its help
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#help-text").render())
        for words in ("Generation", "Origin", "Estimated completion", "Stale rejection", "HOLD", "RECOVERY", "TOOL WAIT"):
            assert words in text
        await pilot.press("escape")
        await pilot.pause()
        app.screen.query_one("#right").focus()
        await pilot.press("f3")
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


@run_async
async def test_choosing_a_ladder_move_shows_why():
    app, backend, clock = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await to_question(app, clock, pilot)
        wait(app, clock, 0.45)  # the quiet wait expires
        await pilot.pause()
        log = app.screen.query_one("#log")
        options = log.query_one("#log-lines")
        lines = log.shown()
        index = next(i for i, line in enumerate(lines) if "ladder -> gentle_check" in line)
        options.focus()
        options.highlighted = index
        await pilot.press("enter")
        await pilot.pause()
        why = panel_text(app.screen.query_one("#why"))
        assert "listening window expired" in why
        assert "led to by: timer window fired" in why
        assert "armed at" in why and "from observed" in why


def test_silent_backend_is_still_what_others_import():
    assert SilentBackend().name == "silent"
    assert asyncio.iscoroutinefunction(SilentBackend().start)


def test_a_questions_own_ladder_wording_is_listed_for_editing():
    # the confirmation's reminders are its own (a per-question ladder): the editor lists them
    from console.prompts import prompt_items
    from sessions.flowfiles import load_flow

    items = {item.key: item for item in prompt_items(load_flow("reference_code"))}
    gentle = items["question:confirm_code:gentle_check"]
    assert gentle.path == ("stages", 3, "ladder", "prompts", "gentle_check")
    assert "Was the code I read out right?" in gentle.text
    assert items["question:confirm_code:alternative_route"].path[-1] == "prompt"
    assert "ladder:route_unavailable" in items and "ladder:close_tool_failed" in items
