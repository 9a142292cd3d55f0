"""Pilot tests of the console on a silent backend and a hand-driven clock."""

import asyncio
import functools
import json

from console_fixtures import Clock, SilentBackend, compile_data, held_matcher, quick_flow_data

from console.app import LullApp
from console.screens.rehearse import panel_text
from console.prompts import prompt_items
from ladder import PlaybackCompleted, PlaybackStarted
from sessions.journal import read_journal

SIZE = (140, 48)


def run_async(test):
    """Run an async test on a fresh loop (no plugin needed)."""

    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        asyncio.run(test(*args, **kwargs))

    return wrapper


def make_app(tmp_path=None, journal=False, flow_path=None):
    data = quick_flow_data()
    if flow_path is not None:
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
        notice="Text backend: type the caller's turns below.",
    )
    return app, backend, clock


def play_out(app, backend, clock, seconds=0.5):
    """The endpoint plays every prompt that is still waiting, one after another."""
    done = getattr(backend, "done", set())
    backend.done = done
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


async def to_question(app, backend, clock, pilot):
    await pilot.pause()
    for _ in range(3):  # greeting, disclosure, question
        play_out(app, backend, clock)
    await pilot.pause()


@run_async
async def test_a_wait_request_shows_the_hold(tmp_path):
    app, backend, clock = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await to_question(app, backend, clock, pilot)
        await pilot.click("#caller")
        await pilot.press(*"give me a moment", "enter")
        play_out(app, backend, clock)
        await pilot.pause()
        ladder = panel_text(app.screen.query_one("#ladder"))
        assert "state held" in ladder and "HOLD" in ladder
        timers = panel_text(app.screen.query_one("#timers"))
        assert "hold" in timers and "observed" in timers
        assert [p.kind for p in backend.spoken].count("acknowledgement") == 1


@run_async
async def test_injected_failure_and_recovery_change_the_panels(tmp_path):
    app, backend, clock = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await to_question(app, backend, clock, pilot)
        await pilot.press("f4")
        await pilot.pause()
        assert "RECOVERY" in panel_text(app.screen.query_one("#ladder"))
        assert "recovery" in panel_text(app.screen.query_one("#timers"))
        await pilot.press("f5")
        await pilot.pause()
        assert backend.spoken[-1].kind == "restate"
        assert "RECOVERY" not in panel_text(app.screen.query_one("#ladder"))


@run_async
async def test_a_duplicate_timer_shows_as_rejected_with_its_reason(tmp_path):
    app, backend, clock = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await to_question(app, backend, clock, pilot)
        wait(app, clock, 0.45)  # the quiet wait expires: the gentle check is requested
        await pilot.pause()
        assert backend.spoken[-1].kind == "reminder"
        await pilot.press("f6")
        await pilot.pause()
        timers = panel_text(app.screen.query_one("#timers"))
        assert "✗ timer_fired" in timers and "duplicate_delivery" in timers
        assert [p.kind for p in backend.spoken].count("reminder") == 1


async def edit_and_apply(app, pilot, key, text) -> set[str]:
    """On the prompts screen (F2), write `text` for the item `key`, apply it to the
    running call (F5) and go back (F1); the keys the screen listed."""
    await pilot.press("f2")
    await pilot.pause()
    editor = app.screen
    keys = {i.key for i in editor.items}
    editor.select(next(i for i in editor.items if i.key == key))
    editor.query_one("#prompt-text").text = text
    await pilot.pause()
    await pilot.press("f5")
    await pilot.press("f1")
    return keys


@run_async
async def test_an_applied_edit_changes_the_next_spoken_prompt(tmp_path):
    app, backend, clock = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await to_question(app, backend, clock, pilot)
        await edit_and_apply(app, pilot, "ladder:gentle_check", "No rush. Do you need a little longer?")
        wait(app, clock, 0.45)
        await pilot.pause()
        assert backend.spoken[-1].kind == "reminder"
        assert backend.spoken[-1].text == "No rush. Do you need a little longer?"


@run_async
async def test_save_writes_a_valid_flow_and_an_invalid_edit_leaves_the_file_alone(tmp_path):
    path = tmp_path / "mine.json"
    app, backend, clock = make_app(tmp_path, flow_path=path)
    original = path.read_text()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f2")
        await pilot.pause()
        editor = app.screen
        editor.select(next(i for i in editor.items if i.key == "ladder:alternative_route"))
        editor.query_one("#prompt-text").text = "I can transfer you to a person now."  # not available
        await pilot.pause()
        assert "promises 'transfer to a person'" in panel_text(editor.query_one("#prompt-lint"))
        await pilot.press("f6")
        await pilot.pause()
        assert path.read_text() == original  # refused: the route is unavailable
        editor.query_one("#prompt-text").text = "We can skip the code for now."
        editor.select(next(i for i in editor.items if i.key == "stage:greet"))
        editor.query_one("#prompt-text").text = "Good morning, reference desk."
        await pilot.pause()
        await pilot.press("f6")
        await pilot.pause()
    saved = json.loads(path.read_text())
    assert saved["stages"][0]["say"] == "Good morning, reference desk."
    assert saved["ladder"]["stages"][2]["prompt"] == "We can skip the code for now."
    # everything else is as it was
    original_data = json.loads(original)
    original_data["stages"][0]["say"] = saved["stages"][0]["say"]
    original_data["ladder"]["stages"][2]["prompt"] = saved["ladder"]["stages"][2]["prompt"]
    assert saved == original_data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.json"]  # no temp file left


def test_every_prompt_of_the_flow_is_editable():
    flow = compile_data(quick_flow_data())
    keys = {item.key for item in prompt_items(flow)}
    assert {"stage:ask_code", "ladder:gentle_check", "ladder:acknowledgement", "ladder:safe_close"} <= keys


@run_async
async def test_the_close_said_after_half_an_answer_is_editable_and_the_edit_is_what_the_caller_hears(tmp_path):
    app, backend, clock = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await to_question(app, backend, clock, pilot)
        keys = await edit_and_apply(app, pilot, "ladder:partial_close",
                                    "I only have the start of {slot}. Nothing has changed; call us back.")
        assert {"ladder:partial_slot", "ladder:partial_close", "ladder:partial_close_deadline"} <= keys
        backend.say("two nine")  # half a code, then nothing
        await pilot.pause()
        for _ in range(40):
            if app.session.runtime.ladder.state.value in ("closed", "closing") or any(
                    p.kind == "close" for p in backend.spoken):
                break
            play_out(app, backend, clock)
            wait(app, clock, 0.45)
            await pilot.pause()
        said = [p.text for p in backend.spoken]
        assert said[-1] == "I only have the start of your reference code. Nothing has changed; call us back.", said
        assert not any("haven't received" in t for t in said), said


def test_a_journal_recorded_under_older_defaults_has_no_partial_wording_to_edit():
    from ladder.flow.compile import compile_flow

    flow = compile_flow(compile_data(quick_flow_data()).spec, ladder_defaults=2)  # as its replay compiles it
    keys = {item.key for item in prompt_items(flow)}
    assert "ladder:acknowledgement" in keys and not {k for k in keys if k.startswith("ladder:partial_")} - {"ladder:partial_reminder"}


@run_async
async def test_quitting_closes_the_journal(tmp_path):
    app, backend, clock = make_app(tmp_path, journal=True)
    async with app.run_test(size=SIZE) as pilot:
        await to_question(app, backend, clock, pilot)
        await pilot.press("ctrl+q")
        await pilot.pause()
    assert app.session.closed.is_set()
    journal = read_journal(tmp_path / "take")
    assert journal.skipped == [] and journal.records
    assert app.session._journal is None  # closed, flushed


@run_async
async def test_the_incidents_screen_steps_and_judges(tmp_path):
    app, backend, clock = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f3")
        await pilot.pause()
        screen = app.screen
        screen.choose(next(i for i in screen.incidents if i.name == "seven_waits"))
        steps_before = len(screen.run.records)
        await pilot.press("space")
        await pilot.pause()
        assert len(screen.run.records) > steps_before
        assert "space steps" in panel_text(screen.query_one("#incident-verdict"))
        await pilot.press("f4")
        await pilot.pause()
        assert "PASS" in panel_text(screen.query_one("#incident-verdict"))


@run_async
async def test_the_live_call_saves_as_an_incident_that_passes(tmp_path):
    from sessions.incidents import load_incident, run_incident

    app, backend, clock = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await to_question(app, backend, clock, pilot)
        wait(app, clock, 0.45)
        play_out(app, backend, clock)
        await pilot.press("f3")
        await pilot.pause()
        await pilot.press("f9")
        await pilot.pause()
    [path] = (tmp_path / "incidents").glob("*.json")
    outcome = run_incident(load_incident(path))
    assert outcome.passed, outcome.failures
    assert "reminder:gentle_check" in json.loads(path.read_text())["expect"]["prompts"]


@run_async
async def test_the_sessions_screen_steps_through_a_recording_and_replays_it(tmp_path):
    from pathlib import Path as _Path

    from sessions.scenarios import load_scenario, run_scenario

    scenario = _Path(__file__).parent / "scenarios" / "default_hold_then_answer.json"
    run_scenario(load_scenario(scenario), scenario, record_to=tmp_path / "recordings" / "take1")
    app, backend, clock = make_app(tmp_path)
    app.recordings_dir = tmp_path / "recordings"
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f12")
        await pilot.pause()
        screen = app.screen
        assert screen.folders == [tmp_path / "recordings" / "take1"]
        screen.open(screen.folders[0])
        for _ in range(12):
            await pilot.press("right")
        await pilot.pause()
        assert screen.cursor.index == 12
        assert "input 12/" in panel_text(screen.query_one("#session-timeline"))
        await pilot.press("left")
        await pilot.pause()
        assert screen.cursor.index == 11
        await pilot.press("f6")  # replay under the flow as edited in this console
        await pilot.pause()
        log = "\n".join(str(entry) for entry in screen.query_one("#session-log").entries)
        assert "not caller behaviour" in log
        # this console's flow has a quicker ladder than the recording's: episode 1 differs
        assert "episode 1: CHANGED" in log


@run_async
async def test_the_media_line_says_when_intents_fall_back_to_a_lesser_matcher(monkeypatch):
    import voices.understanding.interpret as interpret
    from voices.backends.text import TextBackend

    def missing():
        raise interpret.InterpreterError("cannot load the MiniLM model offline: not installed")

    monkeypatch.setattr(interpret, "load_minilm", missing)
    data = quick_flow_data()
    app = LullApp(compile_data(data), flow_document=data, backend=TextBackend(matcher_kind="classifier"), clock=Clock())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        media = str(app.screen.query_one("#media").render())
        assert "intents by lexical (classifier could not load)" in media, media


@run_async
async def test_an_incident_pressed_after_a_turn_waiting_for_the_matcher_comes_after_it():
    from voices.backends.text import TextBackend

    data = quick_flow_data()
    # a real clock here (the text backend speaks in real time): windows long enough that a
    # busy machine cannot walk the ladder to its close before the keys arrive
    for stage in data["ladder"]["stages"]:
        stage["wait_ms"] = 60_000
    data["ladder"]["episode_ms"] = 600_000
    matcher, release = held_matcher(data)
    backend = TextBackend(matcher=matcher, ms_per_word=10)
    app = LullApp(compile_data(data), flow_document=data, backend=backend)
    inputs = []
    app.session.listeners.append(lambda now, kind, r: inputs.append(r["kind"]) if kind == "input" else None)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.click("#caller")
        await pilot.press(*"hold on", "enter", "f4")  # typed, then the input fails
        await pilot.pause(0.2)
        assert "caller_utterance" not in inputs and "transport_failed" not in inputs
        release.set()
        # the order is the point, not the speed: a busy machine runs the build's thread and
        # the loop late, so wait (up to 30 s) until both are in
        for _ in range(1500):
            await pilot.pause(0.02)
            if "transport_failed" in inputs and "caller_utterance" in inputs:
                break
    assert "caller_utterance" in inputs and "transport_failed" in inputs, inputs
    assert inputs.index("caller_utterance") < inputs.index("transport_failed"), inputs


@run_async
async def test_ctrl_a_selects_the_whole_prompt_so_typing_replaces_it(tmp_path):
    app, backend, clock = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f2")
        await pilot.pause()
        editor = app.screen
        editor.select(next(i for i in editor.items if i.key == "ladder:gentle_check"))
        box = editor.query_one("#prompt-text")
        box.focus()
        await pilot.pause()
        assert box.text.strip()  # there was wording to replace
        await pilot.press("ctrl+a", *"No rush.")
        await pilot.pause()
        assert box.text == "No rush."
        await pilot.press("home", "X")  # home still goes to the line's start
        assert box.text == "XNo rush."
