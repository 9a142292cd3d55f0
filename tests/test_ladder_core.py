"""Controller details beyond the seeds: protocol errors, the table, trace, policy, L9-L13."""

import dataclasses
import json

import pytest
from ladder_harness import Call, seed_policy
from pydantic import ValidationError

from ladder import (
    EVENT_TYPES,
    TRANSITIONS,
    AskQuestion,
    CancelPrompt,
    Controller,
    EndSession,
    Hangup,
    LadderPolicy,
    PlaybackCompleted,
    PlaybackStarted,
    PromptSent,
    ProtocolError,
    ResetRule,
    Route,
    SessionClosed,
    SetRouteAvailability,
    Stage,
    State,
    ToolFinished,
    ToolStarted,
    Trace,
    TransportFailed,
    TransportRecovered,
    TurnStarted,
    event_from_dict,
)
from ladder.policy import default_reset_table


def listening(policy=None) -> Call:
    call = Call(policy or LadderPolicy())
    call.send(PlaybackCompleted(call.ask(0)), 1500)
    return call


# -- protocol ---------------------------------------------------------------------


def test_time_going_backwards_is_a_protocol_error():
    call = listening()
    with pytest.raises(ProtocolError, match="time went backwards: now=100 after 1500"):
        call.send(TurnStarted("t1", 1), 100)


def test_a_non_event_is_a_protocol_error():
    with pytest.raises(ProtocolError, match="expected a ladder event, got dict"):
        Controller().handle({"kind": "hangup"}, 0)


def test_every_state_has_a_row_and_closed_accepts_nothing():
    assert set(TRANSITIONS) == set(State)
    assert TRANSITIONS[State.CLOSED] == {}
    for state, row in TRANSITIONS.items():
        for kind, handler in row.items():
            assert kind in EVENT_TYPES, f"{state}: unknown event kind {kind}"
            assert hasattr(Controller, handler), f"{state}/{kind}: no handler {handler}"


def test_an_event_invalid_in_the_state_is_recorded_and_changes_nothing():
    call = listening()
    call.fire_due(9500)  # gentle check
    call.send(Hangup(), 9600)
    before = call.c.snapshot()
    effects = call.send(ToolStarted("c1", "lookup"), 9700)
    assert [(t.kind, t.reason) for t in call.traces(effects=effects)] == [
        ("ignored", "session_closed")
    ]
    assert call.c.snapshot() | {"now": None} == before | {"now": None}


def test_recovered_without_a_failure_is_rejected_as_stale():
    call = listening()
    call.send(TransportRecovered("input"), 2000)
    assert call.rejected() == ["not_recovering"]
    assert call.c.state is State.LISTENING


# -- trace ------------------------------------------------------------------------


def test_every_trace_record_is_json_with_schema_and_identities():
    call = listening()
    call.say("wait_request", 3000)
    call.fire_due(call.c.next_deadline())
    call.send(TransportFailed("input", "device_lost"), 60000)
    call.fire_due(call.c.next_deadline())
    traces = call.traces()
    assert len(traces) > 20
    for trace in traces:
        data = json.loads(json.dumps(trace.to_dict()))
        assert data["schema"] == 1
        for key in ("kind", "reason", "question", "episode", "generation", "token", "turn", "stage", "at", "state"):
            assert key in data
    fired = [t for t in traces if t.kind == "timer_fired"]
    assert fired and all(t.generation is not None for t in fired)


def test_events_round_trip_through_dicts():
    samples = {
        "ask_question": AskQuestion("q", "Your code?"),
        "turn_started": TurnStarted("t", 3),
        "transport_failed": TransportFailed("recognizer", "crash"),
        "tool_finished": ToolFinished("c", "unknown"),
    }
    for kind, event in samples.items():
        assert event.kind == kind
        assert event_from_dict(json.loads(json.dumps(event.to_dict()))) == event
    for cls in EVENT_TYPES.values():
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen


@pytest.mark.parametrize(
    "data, message",
    [
        ({"kind": "shout"}, "unknown event kind 'shout'"),
        ({"kind": "turn_started", "turn": "t"}, "missing field 'seq'"),
        ({"kind": "turn_interpreted", "turn": "t", "seq": 1, "intent": "maybe"}, "field 'intent' is 'maybe'"),
        ({"kind": "hangup", "loud": True}, "unexpected field 'loud'"),
        ({"kind": "playback_started", "token": "7"}, "field 'token' must be an integer"),
    ],
)
def test_bad_event_dicts_say_what_is_wrong(data, message):
    with pytest.raises(ValueError, match=message):
        event_from_dict(data)


# -- policy ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"stages": (Stage(name="wait", wait_ms=10), Stage(name="check", wait_ms=10, prompt="?"))}, "the last stage must close"),
        ({"stages": (Stage(name="w", wait_ms=10, routes=("sms",)), Stage(name="c", wait_ms=1, closes=True))}, "route 'sms' is not declared"),
        ({"reset": default_reset_table() | {"noise": ResetRule(window="resume", deadline="reset")}}, "reset.noise"),
        ({"reset": default_reset_table() | {"wait_request": ResetRule(window="hold", deadline="reset")}}, "reset.wait_request"),
        ({"reset": default_reset_table() | {"answer": ResetRule(window="rearm")}}, "reset.answer"),
        ({"hold_ms": 100_000, "hold_budget_ms": 50_000}, "hold_ms"),
    ],
)
def test_an_impossible_policy_is_refused_at_load(overrides, message):
    with pytest.raises(ValidationError, match=message):
        LadderPolicy(**overrides)


def test_the_ladder_is_finite_and_cannot_rearm_forever():
    call = listening()
    for _ in range(50):
        deadline = call.c.next_deadline()
        if deadline is None:
            break
        call.fire_due(deadline)
        for p in call.prompts(call.last):
            call.send(PlaybackCompleted(p.token), call.c.now + 500)
    assert call.c.state is State.CLOSED
    assert call.ladder_actions() == ["gentle_check", "alternative_route", "close_incomplete"]


def test_stage_restarts_are_bounded_by_max_restarts():
    reset = default_reset_table() | {"partial_answer": ResetRule(window="rearm", stage="restart")}
    call = listening(LadderPolicy(reset=reset, max_restarts=1))
    call.fire_due(9500)
    call.say("partial_answer", 9600)
    assert call.c.current_stage == "quiet_wait"
    call.fire_due(call.c.next_deadline())
    call.say("partial_answer", call.c.now + 10)
    assert call.c.current_stage == "gentle_check"
    assert call.traces("reset_denied")


# -- L9-L13 ----------------------------------------------------------------------


def test_silence_never_answers_or_authorizes():
    call = listening()
    while call.c.state is not State.CLOSED:
        call.fire_due(call.c.next_deadline())
        for p in call.prompts(call.last):
            call.send(PlaybackCompleted(p.token), call.c.now)
    assert call.c.answer_for("reference_code") is None
    assert not call.c.may_commit("reference_code")


def test_a_decline_answers_the_question_but_never_authorizes_a_commit():
    call = listening()
    call.say("decline", 3000)
    assert call.c.answer_for("reference_code").intent == "decline"
    assert not call.c.may_commit("reference_code")
    call2 = listening()
    call2.say("answer", 3000, value="4821")
    assert call2.c.may_commit("reference_code")


def test_a_transport_failure_never_re_asks_the_question():
    call = listening()
    call.send(TransportFailed("input", "no_callbacks"), 3000)
    while call.c.state is not State.CLOSED:
        call.fire_due(call.c.next_deadline())
        for p in call.prompts(call.last):
            call.send(PlaybackCompleted(p.token), call.c.now)
    kinds = [p.kind for p in call.prompts()]
    assert kinds == ["question", "channel_recovery", "close"]
    assert call.c.outcome == "input_path_failed"
    assert call.c.episodes[0].outcome == "input_path_failed"


def test_an_output_failure_closes_without_speaking_into_it():
    call = listening()
    call.send(TransportFailed("output", "device_lost"), 3000)
    call.fire_due(call.c.next_deadline())
    assert [p.kind for p in call.prompts()] == ["question"]
    assert call.c.state is State.CLOSED and call.c.close_reason == "output_path_failed"


def test_an_unknown_tool_outcome_stays_pending_in_the_close():
    call = listening()
    call.send(ToolStarted("c1", "lookup_reference"), 2000)
    call.send(ToolFinished("c1", "unknown"), 9000)
    call.send(EndSession(), 9100)
    closed = [e for e in call.effects if isinstance(e, SessionClosed)]
    assert closed[0].pending_tools == ("c1",)
    assert call.c.unresolved_tools == {"c1": "lookup_reference"}


def test_a_tool_finishing_twice_is_stale():
    call = listening()
    call.send(ToolStarted("c1", "lookup_reference"), 2000)
    call.send(ToolFinished("c1", "ok"), 3000)
    call.send(ToolFinished("c1", "ok"), 3100)
    assert call.rejected() == ["unknown_tool_call"]


def test_only_available_routes_are_offered_and_availability_changes_live():
    routes = (
        Route(id="continue", label="continue without it"),
        Route(id="transfer", label="a person", available=False, handoff=True),
    )
    stages = (
        Stage(name="quiet_wait", wait_ms=10),
        Stage(name="alternative_route", wait_ms=10, prompt="Options.", routes=("continue", "transfer")),
        Stage(name="safe_close", wait_ms=10, prompt="Bye.", closes=True),
    )
    policy = seed_policy(stages=stages, routes=routes)
    call = Call(policy)
    call.send(PlaybackCompleted(call.ask(0)), 0)
    call.fire_due(10)
    assert call.prompts(call.last)[0].routes == ("continue",)
    call.send(SetRouteAvailability("transfer", True), 11)
    call.say("route", 12, route="transfer")
    assert call.c.episodes[0].outcome == "handed_off"


@pytest.mark.parametrize("route_answers_turn", [True, False])
def test_a_caller_handed_off_is_not_told_they_were_missed(route_answers_turn):
    # the caller's turn closed, then was read as an available hand-off: the route is the
    # response, so the missing-response watchdog stands down; a policy recorded before
    # `route_answers_turn` (replay) reprompted 4 s later, as it did then
    routes = (Route(id="adviser", label="an adviser", handoff=True),)
    stages = (Stage(name="quiet_wait", wait_ms=10_000), Stage(name="safe_close", wait_ms=10, prompt="Bye.", closes=True))
    call = Call(seed_policy(stages=stages, routes=routes, route_answers_turn=route_answers_turn))
    call.send(PlaybackCompleted(call.ask(0)), 0)
    call.say("route", 100, route="adviser")
    assert call.c.episodes[0].outcome == "handed_off"
    later = call.fire_due(100 + call.c.policy.watchdog_ms + 10)
    reprompts = [p.text for p in call.prompts(later) if p.kind == "reprompt"]
    assert reprompts == ([] if route_answers_turn else ["Sorry, I missed that. Could you say it again?"])


def test_speech_over_an_uninterruptible_prompt_does_not_cut_it():
    stages = (
        Stage(name="quiet_wait", wait_ms=10),
        Stage(name="notice", wait_ms=10, prompt="This call is recorded.", interruptible=False),
        Stage(name="safe_close", wait_ms=10, prompt="Bye.", closes=True),
    )
    call = Call(seed_policy(stages=stages))
    call.send(PlaybackCompleted(call.ask(0)), 0)
    call.fire_due(10)
    token = call.token_of("reminder")
    call.send(PlaybackStarted(token), 11)
    effects = call.send(TurnStarted("t1", 1), 12)
    assert not [e for e in effects if isinstance(e, CancelPrompt)]
    assert call.traces("speech_over_uninterruptible", effects=effects)


def test_a_known_send_duration_sets_the_estimated_boundary():
    call = Call(LadderPolicy())
    token = call.ask(0)
    call.send(PromptSent(token, 2000), 50)
    estimate = call.c.timer("playback_estimate")
    assert estimate.due == 50 + 2000 + call.c.policy.completion_grace_ms
    call.fire_due(estimate.due)
    window = call.window()
    assert window.origin == "estimated"
    assert any(isinstance(e, Trace) and e.kind == "playback_completion_missing" for e in call.effects)


def test_a_reminder_the_caller_heard_part_of_is_not_played_again_after_a_backchannel():
    # found by the property soak: "ready" outside a wait (attention) over a playing
    # gentle check cut it, and the reminder was asked again, so a stage played twice
    from ladder import AskQuestion, Controller, PlaybackCompleted, PlaybackStarted, RequestPrompt
    from ladder.events import TurnInterpreted

    c = Controller()
    c.handle(AskQuestion("q1", "What is your reference code?"), 0)
    c.handle(PlaybackStarted(1), 0)
    c.handle(PlaybackCompleted(1), 250)
    effects = c.handle_timer(c.next_deadline())
    reminder = next(e for e in effects if isinstance(e, RequestPrompt))
    c.handle(PlaybackStarted(reminder.token), 8250)
    effects = c.handle(TurnInterpreted("t1", 1, "ready"), 8250)
    assert not [e for e in effects if isinstance(e, RequestPrompt) and e.kind == "reminder"]
