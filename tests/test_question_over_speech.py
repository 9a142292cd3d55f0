"""A question that comes while the caller is speaking waits for their turn (L5).

A caller who talks over the greeting cuts it; the flow then asks its question at once.
Played then, the question would talk over the caller: it waits, and is asked only if
their turn did not answer it, ask for time, or ask for it again."""

from __future__ import annotations

from ladder_harness import Call, seed_policy

from ladder import Announce, AskQuestion, LadderPolicy, PlaybackStarted, State, TurnEnded, TurnInterpreted


def _cut_greeting(policy: LadderPolicy | None = None) -> tuple[Call, str]:
    """The greeting plays, the caller speaks over it, and the question is asked."""
    call = Call(policy or seed_policy(episode_ms=10_000))
    call.send(Announce("Hello, this is the clinic.", label="greet"), 0)
    greeting = call.token_of("statement")
    call.send(PlaybackStarted(greeting), 10)
    turn = call.speech(500)
    call.send(AskQuestion("ref", "What is your reference?"), 501)
    return call, turn


def _next(call: Call) -> None:
    """Jump to the next deadline and fire what is due."""
    call.fire_due(max(call.c.next_deadline(), call.c.now))


def _end(call: Call, turn: str, intent: str, now: float, **kw) -> None:
    seq = int(turn[1:])
    call.send(TurnEnded(turn, seq), now)
    call.send(TurnInterpreted(turn, seq, intent, **kw), now + 1)


def test_the_question_is_not_played_over_the_caller():
    call, _ = _cut_greeting()
    assert [p.kind for p in call.prompts()] == ["statement"]
    assert call.traces("question_deferred")[-1].reason == "caller_speaking"
    assert call.c.state is State.HEARING and call.c.timer("window") is None


def test_a_turn_that_does_not_answer_it_gets_the_question():
    for intent in ("backchannel", "noise", "unclear", "ready"):
        call, turn = _cut_greeting()
        _end(call, turn, intent, 900)
        assert [p.kind for p in call.prompts()] == ["statement", "question"], intent
        assert call.prompts()[-1].text == "What is your reference?"
        assert call.c.state is State.ASKING
        # no reprompt, no watchdog: the question is the response
        assert call.c.timer("watchdog") is None


def test_an_answer_given_before_the_question_answers_it():
    call, turn = _cut_greeting()
    _end(call, turn, "answer", 900, value="4821")
    assert [p.kind for p in call.prompts()] == ["statement"]
    assert call.c.answer_for("ref").value == "4821"


def test_time_asked_for_before_the_question_holds_then_the_question_is_the_check_in():
    call, turn = _cut_greeting()
    _end(call, turn, "wait_request", 900)
    assert call.c.state is State.HELD
    while call.c.state is State.HELD:
        _next(call)
    asked = [p for p in call.prompts() if p.kind == "question"]
    assert asked and asked[-1].text == "What is your reference?", [p.kind for p in call.prompts()]
    # never "shall I repeat the question?" about a question never played
    assert not [p for p in call.prompts() if p.kind == "reminder"]


def test_a_repeat_request_is_answered_with_the_question():
    call, turn = _cut_greeting()
    _end(call, turn, "repeat_request", 900)
    assert [p.kind for p in call.prompts()][-1] in ("question", "restate")
    assert call.prompts()[-1].text == "What is your reference?"


def test_a_turn_never_read_gets_the_question_when_the_watchdog_fires():
    call, turn = _cut_greeting()
    call.send(TurnEnded(turn, int(turn[1:])), 900)
    while not call.traces("watchdog_fired"):
        _next(call)
    assert [p.kind for p in call.prompts()] == ["statement", "question"]


def test_a_turn_never_read_does_not_hold_back_a_later_question():
    # speech over a statement with no question pending, never read: the watchdog answers it
    call = Call(seed_policy(episode_ms=10_000))
    call.send(Announce("Hello, this is the clinic.", label="greet"), 0)
    call.send(PlaybackStarted(call.token_of("statement")), 10)
    turn = call.speech(500)
    call.send(TurnEnded(turn, int(turn[1:])), 900)
    while not call.traces("watchdog_fired"):
        _next(call)
    call.send(AskQuestion("ref", "What is your reference?"), call.c.now + 5000)
    assert call.prompts()[-1].text == "What is your reference?"
    assert not call.traces("question_deferred")


def test_a_question_asked_in_silence_plays_at_once():
    call = Call(seed_policy())
    call.send(AskQuestion("ref", "What is your reference?"), 0)
    assert [p.kind for p in call.prompts()] == ["question"]
    assert not call.traces("question_deferred")
