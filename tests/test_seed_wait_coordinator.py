"""Seed 001 (waits): the seven-wait regression test and its event-order cases."""

from ladder_harness import Call

from ladder import (
    Hangup,
    LadderPolicy,
    PlaybackCompleted,
    PromptFailed,
    State,
    TurnEnded,
    TurnInterpreted,
    TurnStarted,
    WaitCoordinator,
)

# -- the coordinator alone, as the seed's test uses it -------------------------------


def test_seven_consecutive_waits_acknowledge_only_the_first():
    coordinator = WaitCoordinator()
    acknowledgements = []
    for sequence in range(1, 8):
        turn_id = f"turn:{sequence}"
        assert coordinator.claim_long_wait(
            {"user_turn_id": turn_id, "user_turn_sequence": sequence}
        )
        claim = coordinator.consume_claim(turn_id, sequence)
        assert claim is not None
        acknowledgements.append(claim.should_acknowledge)
    assert acknowledgements == [True, False, False, False, False, False, False]


def test_a_new_pause_after_the_caller_resumes_may_acknowledge_again():
    coordinator = WaitCoordinator()
    coordinator.claim_long_wait({"user_turn_id": "a", "user_turn_sequence": 1})
    assert coordinator.consume_claim("a", 1).should_acknowledge
    coordinator.resume("b", 2)
    coordinator.claim_long_wait({"user_turn_id": "c", "user_turn_sequence": 3})
    assert coordinator.consume_claim("c", 3).should_acknowledge


def test_a_missing_turn_identity_cannot_defer_the_watchdog():
    coordinator = WaitCoordinator()
    assert not coordinator.claim_long_wait({"user_turn_sequence": 1})
    assert not coordinator.claim_long_wait({"user_turn_id": "x"})
    assert not coordinator.is_waiting


def test_a_late_stop_from_an_older_wait_turn_loses_its_permission():
    coordinator = WaitCoordinator()
    coordinator.claim_long_wait({"user_turn_id": "old", "user_turn_sequence": 1})
    coordinator.resume("new", 2)  # the caller came back before old's stop callback
    claim = coordinator.consume_claim("old", 1)
    assert claim is not None, "the old turn is still recognised (no watchdog for it)"
    assert claim.should_acknowledge is False


def test_resuming_within_the_same_open_turn_removes_its_wait_record():
    coordinator = WaitCoordinator()
    coordinator.claim_long_wait({"user_turn_id": "t", "user_turn_sequence": 1})
    coordinator.resume("t", 1)  # still the same, open turn
    assert coordinator.consume_claim("t", 1) is None  # so the watchdog is armed


def test_pending_records_are_bounded_and_cleared_on_cleanup():
    coordinator = WaitCoordinator(max_records=4)
    for seq in range(10):
        coordinator.claim_long_wait({"user_turn_id": f"t{seq}", "user_turn_sequence": seq})
    assert coordinator.pending == 4 and coordinator.evicted == 6
    coordinator.clear()
    assert coordinator.pending == 0 and not coordinator.is_waiting


# -- the same rules inside the controller --------------------------------------------


def listening() -> Call:
    call = Call(LadderPolicy())
    call.send(PlaybackCompleted(call.ask(0)), 1500)
    return call


def kinds(call: Call, effects=None) -> list[str]:
    return [p.kind for p in call.prompts(effects)]


def test_decision_first_skips_the_watchdog_and_acknowledges_at_turn_close():
    call = listening()
    call.send(TurnStarted("t1", 1), 3000)
    call.send(TurnInterpreted("t1", 1, "wait_request"), 3400)
    assert kinds(call, call.last) == []  # not while the caller is still talking
    call.send(TurnEnded("t1", 1), 3600)
    assert kinds(call, call.last) == ["acknowledgement"]
    assert call.c.timer("watchdog") is None
    assert call.traces("watchdog_armed") == []


def test_turn_closing_first_arms_the_watchdog_and_the_wait_decision_cancels_it():
    call = listening()
    call.send(TurnStarted("t1", 1), 3000)
    call.send(TurnEnded("t1", 1), 3600)
    watchdog = call.c.timer("watchdog")
    assert watchdog is not None and watchdog.turn == "t1"
    call.send(TurnInterpreted("t1", 1, "wait_request"), 4000)
    assert call.c.timer("watchdog") is None
    assert kinds(call, call.last) == ["acknowledgement"]  # without another stop event
    call.deliver("watchdog", watchdog.generation, watchdog.due)
    assert call.rejected() == ["invalidated_by_wait_decision"]
    assert "reprompt" not in kinds(call)


def test_seven_wait_turns_in_the_controller_give_one_acknowledgement_and_no_reprompt():
    call = listening()
    for seq in range(1, 8):
        t = 3000 + seq * 5000
        call.send(TurnStarted(f"turn:{seq}", seq), t)
        call.send(TurnInterpreted(f"turn:{seq}", seq, "wait_request"), t + 400)
        call.send(TurnEnded(f"turn:{seq}", seq), t + 500)
        if seq == 1:
            call.send(PlaybackCompleted(call.token_of("acknowledgement")), t + 1500)
    assert kinds(call).count("acknowledgement") == 1
    assert "reprompt" not in kinds(call)
    assert call.c.state is State.HELD


def test_inactivity_handling_continues_during_a_wait():
    call = listening()
    call.say("wait_request", 3000, end_first=False)
    call.send(PlaybackCompleted(call.token_of("acknowledgement")), 4000)
    hold = call.c.timer("hold")
    # the default still-waiting cadence keeps the caller company to the hold budget
    assert hold.due == 4000 + call.c.policy.hold_budget_ms
    assert call.c.next_deadline() == call.c.timer("still_waiting").due == 4000 + call.c.policy.still_waiting_ms
    call.fire_due(hold.due)
    assert [p.stage for p in call.prompts(call.last) if p.kind == "reminder"] == ["gentle_check"]  # a check-in


def test_a_rejected_acknowledgement_restores_inactivity_handling():
    call = listening()
    call.say("wait_request", 3000, end_first=False)
    call.send(PromptFailed(call.token_of("acknowledgement"), "tts_error"), 3100)
    hold = call.c.timer("hold")
    assert hold is not None and hold.origin == "prompt_failed"
    assert call.c.next_deadline() == min(hold.due, call.c.timer("still_waiting").due)


def test_a_cancelled_acknowledgement_before_playback_restores_inactivity_handling():
    call = listening()
    call.say("wait_request", 3000, end_first=False)
    ack = call.token_of("acknowledgement")
    # the estimate of its playback passes with no report at all: bounded, not stuck
    call.fire_due(call.c.timer("playback_estimate").due)
    assert call.c.timer("hold") is not None
    assert call.c.prompts[ack].completion_estimated


def test_ready_is_readiness_only_while_waiting():
    call = listening()
    call.say("ready", 3000)
    assert kinds(call, call.last) == []  # outside a wait "ready" is just unclear
    assert call.traces("interpretation_inactive")
    call.say("wait_request", 4000)
    call.send(PlaybackCompleted(call.token_of("acknowledgement")), 5000)
    call.say("ready", 9000)
    assert kinds(call, call.last) == ["restate"]
    assert call.c.answer_for("reference_code") is None


def test_a_question_that_forbids_repeating_is_not_restated_on_ready():
    call = Call(LadderPolicy())
    call.send(PlaybackCompleted(call.ask(0, repeatable=False)), 1500)
    call.say("wait_request", 3000)
    call.send(PlaybackCompleted(call.token_of("acknowledgement")), 4000)
    call.say("ready", 9000)
    assert "restate" not in kinds(call)
    assert call.traces("restate_forbidden")
    assert call.c.state is State.LISTENING


def test_a_resumed_answer_in_the_same_open_turn_keeps_watchdog_protection():
    call = listening()
    call.send(TurnStarted("t1", 1), 3000)
    call.send(TurnInterpreted("t1", 1, "wait_request"), 3300)
    call.send(TurnInterpreted("t1", 1, "answer", value="4821"), 4500)
    call.send(TurnEnded("t1", 1), 4600)
    watchdog = call.c.timer("watchdog")
    assert watchdog is not None and watchdog.turn == "t1"
    call.fire_due(watchdog.due)
    assert kinds(call, call.last) == ["reprompt"]


def test_wait_records_are_cleared_when_the_session_closes():
    call = listening()
    call.send(TurnStarted("t1", 1), 3000)
    call.send(TurnInterpreted("t1", 1, "wait_request"), 3300)
    assert call.c.waits.pending == 1
    call.send(Hangup(), 3400)
    assert call.c.waits.pending == 0 and call.c.state is State.CLOSED
