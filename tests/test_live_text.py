"""The live runtime on the text backend, in real (compressed) time.

The flow is the default one with its waits shortened, so a whole call takes a few
seconds; assertions are about what happened, never about how long it took.
"""

import asyncio

from console_fixtures import compile_data, held_matcher, journal_text_without_clocks, quick_flow_data

from console.headless import rehearse_headless
from sessions.live import LiveSession
from voices.backends.text import TextBackend
from sessions.journal import read_journal


def quick_flow():
    return compile_data(quick_flow_data())


def rehearse(lines, journal_dir=None):
    lines_out = []
    backend = TextBackend(ms_per_word=20, start_delay_ms=10, on_line=lambda who, text: lines_out.append((who, text)))
    session = LiveSession(quick_flow(), backend, journal_dir=journal_dir)
    stream = []
    outcome = asyncio.run(
        asyncio.wait_for(
            rehearse_headless(session, backend.say, lines=iter(lines), write=stream.append, speaking=lambda: backend.speaking),
            timeout=30,
        )
    )
    return outcome, lines_out, stream, session


def test_a_typed_call_answers_confirms_and_completes(tmp_path):
    outcome, lines, stream, session = rehearse(["4 8 2 1", "yes"], tmp_path / "take")
    assert outcome == "completed"
    said = [text for who, text in lines if who == "agent"]
    assert said[:3] == [
        "Hello, this is the reference desk.",
        "This call may be recorded for quality and training purposes.",
        "What is your reference code?",
    ]
    assert "I heard 4 8 2 1. Is that right?" in said
    assert said[-1].startswith("I found your reference")
    assert session.runtime.state["reference_code"] == "4821"
    journal = read_journal(tmp_path / "take")
    assert journal.skipped == [] and journal.header["flow"] == "reference_code"
    text = journal_text_without_clocks(tmp_path / "take" / "journal.jsonl")
    assert "4821" not in text and "4 8 2 1" not in text  # redacted on the way out
    kinds = [r["kind"] for r in journal.inputs()]
    assert "timer_fired" in kinds or "playback_completed" in kinds
    assert any("slot reference_code = '4821'" in line for line in stream)  # the screen shows it


def test_no_with_a_new_code_at_the_confirmation_confirms_the_new_code(tmp_path):
    outcome, lines, stream, session = rehearse(["4 8 2 1", "no, it's 4 8 2 2", "yes"], tmp_path / "take")
    assert outcome == "completed"
    said = [text for who, text in lines if who == "agent"]
    first = said.index("I heard 4 8 2 1. Is that right?")
    assert said[first + 1] == "I heard 4 8 2 2. Is that right?"  # not the code question again
    assert session.runtime.state["reference_code"] == "4822" and session.runtime.state["code_confirmed"] is True
    text = journal_text_without_clocks(tmp_path / "take" / "journal.jsonl")
    assert "4822" not in text and "4 8 2 2" not in text


def test_silence_walks_the_ladder_to_a_safe_close_in_real_time():
    outcome, lines, stream, session = rehearse([])
    assert outcome == "closed_incomplete"
    said = [text for who, text in lines if who == "agent"]
    assert said[-3:] == ["Take your time.", "We can carry on without it.", "Nothing was changed. Goodbye."]
    assert session.runtime.state.get("reference_code") is None
    assert session.closed.is_set()


def test_a_hold_is_acknowledged_once_and_no_reopens_the_question():
    outcome, lines, stream, session = rehearse(["give me a moment", "/sleep 0.3", "hang on", "4 8 2 1", "no", "4 8 2 2", "yes"])
    said = [text for who, text in lines if who == "agent"]
    assert said.count("Sure, take your time.") == 1
    assert "I heard 4 8 2 2. Is that right?" in said  # "no" reopened the code question
    assert session.runtime.state["reference_code"] == "4822"
    assert outcome == "completed"


class SilentBackend:
    """Speaks nowhere; the test reports playback itself (a deterministic driver)."""

    def __init__(self):
        self.spoken = []

    def attach(self, session):
        self.session = session

    async def start(self):
        pass

    def speak(self, prompt):
        self.spoken.append(prompt)

    def cancel(self, token):
        pass

    def set_end_of_speech(self, ms):
        pass

    async def close(self):
        pass


def test_the_live_session_fires_due_timers_as_events_and_dup_is_rejected():
    from sessions.live_incidents import LiveIncidents
    from ladder import PlaybackCompleted, StartCall

    clock = [100.0]
    backend = SilentBackend()
    session = LiveSession(quick_flow(), backend, clock=lambda: clock[0])
    stream = []
    session.listeners.append(lambda now, kind, record: stream.append((now, kind, record)))
    incidents = LiveIncidents(session)
    session.feed(StartCall())
    for _ in range(3):  # greeting, disclosure, question: each completes 0.5 s later
        clock[0] += 0.5
        session.feed(PlaybackCompleted(backend.spoken[-1].token))
    window = session.runtime.ladder.timer("window")
    assert window is not None and window.origin == "observed"
    clock[0] += 0.4  # the window is due now
    session._on_timer()
    assert backend.spoken[-1].kind == "reminder"
    fired = [r for _, kind, r in stream if kind == "input" and r["kind"] == "timer_fired"]
    assert fired and fired[-1]["event"]["generation"] == window.generation
    assert incidents.run("dup") is None
    rejected = [r for _, _, r in stream if r.get("kind") == "stale_rejected"]
    assert rejected[-1]["reason"] == "duplicate_delivery"
    assert [p.kind for p in backend.spoken].count("reminder") == 1


def test_bad_incident_commands_say_what_was_expected():
    outcome, lines, stream, session = rehearse(["/fail modem", "/tool nope ok", "/route transfer maybe", "/bogus", "/hangup"])
    errors = [line for line in stream if line.startswith("error:")]
    assert errors == [
        "error: /fail: expected one of input, output, recognizer, got 'modem'",
        "error: /tool: the flow declares no tool 'nope'",
        "error: /route: expected /route ID on|off",
        "error: unknown command /bogus; commands: /sleep /fail /recover /hangup /tool /route /dup /quit",
    ]
    assert outcome == "caller_disconnected"


def test_lull_rehearse_types_turns_through_the_voice_backends_classifier():
    # a typed turn is understood as a spoken one would be: "the printer is jammed" shares
    # enough letters with an example for the character-level matcher, not for the classifier
    from console.cli import rehearse
    from voices.understanding.intent_classifier import ClassifierMatcher

    async def body():
        backend = rehearse._make_backend("text", None, None, None, None, None, None)
        session = LiveSession(compile_data(quick_flow_data()), backend)
        await session.start()
        assert isinstance(backend.matcher.get(), ClassifierMatcher)  # built in a thread while the greeting plays
        assert backend.matcher.match("hold on, let me look")[0] == "wait_request"
        assert backend.matcher.match("the printer is jammed")[0] is None
        await session.stop()

    asyncio.run(body())


def test_without_minilm_typed_turns_match_lexically_and_the_journal_says_so(monkeypatch):
    import voices.understanding.interpret as interpret
    from ladder.flow.understanding.text import LexicalMatcher

    def missing():
        raise interpret.InterpreterError("cannot load the MiniLM model offline: not installed")

    monkeypatch.setattr(interpret, "load_minilm", missing)

    async def body():
        backend = TextBackend(matcher_kind="classifier")
        session = LiveSession(compile_data(quick_flow_data()), backend)
        records = []
        session.listeners.append(lambda now, kind, r: records.append(r))
        await session.start()
        assert isinstance(backend.matcher, LexicalMatcher)
        notes = [r for r in records if r.get("kind") == "intent_matcher"]
        assert notes and notes[0]["asked"] == "classifier" and notes[0]["using"] == "lexical"
        await session.stop()

    asyncio.run(body())


def test_a_turn_typed_while_the_matcher_builds_waits_for_it_without_blocking_the_loop():
    matcher, release = held_matcher(quick_flow_data())

    async def body():
        backend = TextBackend(matcher=matcher, ms_per_word=10)
        session = LiveSession(compile_data(quick_flow_data()), backend)
        records = []
        session.listeners.append(lambda now, kind, r: records.append(r))
        await session.start()
        backend.say("hold on")
        await asyncio.sleep(0.2)  # the loop runs on: timers fire, the turn is not fed yet
        kinds = [r.get("kind") for r in records]
        assert "turn_started" not in kinds and "caller_utterance" not in kinds  # so no watchdog can run out on it
        release.set()
        for _ in range(100):
            await asyncio.sleep(0.02)
            if any(r.get("kind") == "caller_utterance" for r in records):
                break
        utterance = next(r for r in records if r.get("kind") == "caller_utterance")
        assert utterance["event"]["intent"] == "wait_request"
        await session.stop()

    asyncio.run(body())


def test_what_is_done_after_a_waiting_typed_turn_waits_behind_it():
    matcher, release = held_matcher(quick_flow_data())

    async def body():
        backend = TextBackend(matcher=matcher, ms_per_word=10)
        session = LiveSession(compile_data(quick_flow_data()), backend)
        order = []
        session.listeners.append(lambda now, kind, r: order.append(r.get("kind")) if r.get("kind") == "caller_utterance" else None)
        await session.start()
        assert backend.after_typed_turns(lambda: order.append("first")) is False  # nothing waits: at once
        backend.say("hold on")
        assert backend.after_typed_turns(lambda: order.append("incident")) is True
        backend.say("okay I have it")
        await asyncio.sleep(0.1)
        assert order == ["first"]  # the turns and what came after them wait for the build
        release.set()
        for _ in range(100):
            await asyncio.sleep(0.02)
            if order.count("caller_utterance") == 2:
                break
        assert order == ["first", "caller_utterance", "incident", "caller_utterance"]
        assert backend.typed.waiting == 0
        assert backend.after_typed_turns(lambda: order.append("last")) is False and order[-1] == "last"
        await session.stop()

    asyncio.run(body())


def test_a_terminal_that_hangs_up_ends_the_input_without_a_traceback(tmp_path):
    # reading a hung-up terminal raises OSError (EIO) in the reader thread: that is the
    # end of input, and the call goes on to close by itself as with a closed pipe
    import threading

    def hung_up():
        yield "4 8 2 1"
        raise OSError(5, "Input/output error")

    errors = []
    previous = threading.excepthook
    threading.excepthook = errors.append
    try:
        outcome, _lines, _stream, _session = rehearse(hung_up())
    finally:
        threading.excepthook = previous
    assert errors == []
    assert outcome is not None
