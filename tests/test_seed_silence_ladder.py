"""Seed 000's `silence_ladder.py` main block, re-expressed against the controller.

Each test is one assertion (or one tight group) of the seed's example, named after
what it checks. The seed's synthetic integer ticks are kept (waits of 10, deadline
of 100); playback events are delivered by hand, so every boundary is explicit.
"""

from ladder_harness import Call, seed_policy

from ladder import (
    PlaybackCompleted,
    SessionClosed,
    State,
    TurnEnded,
    TurnInterpreted,
    TurnStarted,
)


def asked(policy=None) -> Call:
    """A question whose playback completed at 0: the first window is due at 10."""
    call = Call(policy or seed_policy())
    call.send(PlaybackCompleted(call.ask(0)), 0)
    assert call.window().due == 10 and call.window().origin == "observed"
    return call


def test_a_timer_delivered_before_its_due_time_is_ignored():
    call = asked()
    old = call.window()
    call.deliver("window", old.generation, 9)
    assert call.rejected() == ["not_due"]
    assert call.c.current_stage == "quiet_wait"
    assert call.window() == old  # still armed: the early call changed nothing


def test_speech_cancels_and_collects_then_the_old_timer_is_ignored():
    call = asked()
    old = call.window()
    call.send(TurnStarted("t1", 1), 9)
    assert call.c.state is State.HEARING and call.window() is None
    call.deliver("window", old.generation, 10)
    assert call.rejected() == ["invalidated_by_caller_resumed"]
    assert call.prompts()[-1].kind == "question"  # no reminder was requested


def _to_first_check() -> tuple[Call, object]:
    call = asked()
    call.send(TurnStarted("t1", 1), 9)
    call.send(TurnEnded("t1", 1), 9)
    call.send(TurnInterpreted("t1", 1, "partial_answer", value="48"), 10)
    t = call.window()
    assert t.due == 20  # the seed's `t = l.arm(10, 10)`
    call.fire_due(20)
    return call, t


def test_an_expired_window_asks_the_gentle_check():
    call, _ = _to_first_check()
    assert [p.stage for p in call.prompts(call.last)] == ["gentle_check"]
    assert call.c.state is State.PROMPTING


def test_a_duplicate_delivery_of_the_same_timer_is_ignored():
    call, t = _to_first_check()
    call.deliver("window", t.generation, 20)
    assert call.rejected() == ["duplicate_delivery"]
    assert call.prompts(call.last) == []
    assert call.c.current_stage == "gentle_check"


def _to_hold() -> tuple[Call, object]:
    call, _ = _to_first_check()
    call.send(PlaybackCompleted(call.token_of("reminder")), 20)
    held = call.window()
    assert held.due == 30 and held.origin == "observed"  # armed from completion (L5)
    call.send(TurnStarted("t2", 2), 20)
    call.send(TurnInterpreted("t2", 2, "wait_request"), 20)
    call.send(TurnEnded("t2", 2), 20)
    return call, held


def test_a_hold_invalidates_the_window_it_interrupts():
    call, held = _to_hold()
    assert call.c.state is State.HELD
    call.deliver("window", held.generation, 30)
    assert call.rejected() == ["invalidated_by_caller_resumed"]
    assert call.c.current_stage == "gentle_check"


def _resumed_to_route() -> Call:
    call, _ = _to_hold()
    call.send(PlaybackCompleted(call.token_of("acknowledgement")), 20)
    call.send(TurnStarted("t3", 3), 30)
    call.send(TurnEnded("t3", 3), 30)
    call.send(TurnInterpreted("t3", 3, "ready"), 30)  # the seed's l.resume()
    call.send(PlaybackCompleted(call.token_of("restate")), 30)
    assert call.window().due == 40  # the seed's `t2 = l.arm(30, 10)`
    call.fire_due(40)
    return call


def test_after_resuming_the_next_expiry_offers_the_route_not_the_check_again():
    call = _resumed_to_route()
    assert [p.stage for p in call.prompts(call.last)] == ["alternative_route"]


def _closed() -> tuple[Call, object]:
    call = _resumed_to_route()
    call.send(PlaybackCompleted(call.token_of("reminder")), 40)
    t3 = call.window()
    assert t3.due == 50
    call.fire_due(50)
    assert call.c.state is State.CLOSING
    call.send(PlaybackCompleted(call.token_of("close")), 50)
    return call, t3


def test_the_third_expiry_closes_incomplete():
    call, _ = _closed()
    assert call.c.state is State.CLOSED
    assert call.c.outcome == "closed_incomplete"
    assert [e for e in call.effects if isinstance(e, SessionClosed)][0].outcome == "closed_incomplete"


def test_speech_after_close_stays_closed():
    call, _ = _closed()
    effects = call.send(TurnStarted("t4", 4), 55)
    assert call.c.state is State.CLOSED
    assert [t.kind for t in call.traces(effects=effects)] == ["late_speech_after_close"]


def test_the_old_timer_after_close_is_ignored():
    call, t3 = _closed()
    call.deliver("window", t3.generation, 60)
    assert call.rejected() == ["session_closed"]


def test_the_ladder_asked_exactly_check_route_close():
    call, _ = _closed()
    assert call.ladder_actions() == ["gentle_check", "alternative_route", "close_incomplete"]


def test_the_episode_deadline_closes_during_a_hold():
    call = asked(seed_policy(episode_ms=15))
    call.send(TurnStarted("t1", 1), 1)
    call.send(TurnInterpreted("t1", 1, "wait_request"), 1)
    call.send(TurnEnded("t1", 1), 1)
    call.send(PlaybackCompleted(call.token_of("acknowledgement")), 2)
    assert call.c.state is State.HELD and call.c.timer("hold").due > 15
    call.fire_due(15)  # the seed's h.expire(15)
    assert call.c.episodes[-1].outcome == "deadline_reached"
    assert call.c.state is State.CLOSING and call.c.timer("hold") is None
    call.send(PlaybackCompleted(call.token_of("close")), 16)
    assert call.c.state is State.CLOSED and call.c.outcome == "deadline_reached"


def test_a_late_completion_of_an_obsolete_prompt_does_not_open_the_newer_window():
    # the seed's `x` ladder arms windows of 1 tick
    policy = seed_policy(
        stages=tuple(s.model_copy(update={"wait_ms": 1}) for s in seed_policy().stages)
    )
    call = Call(policy)
    call.send(PlaybackCompleted(call.ask(0)), 0)
    call.fire_due(1)  # x.fire(a, 1)
    prior = call.token_of("reminder")
    call.send(TurnStarted("t1", 1), 1)  # x.speech()
    call.send(TurnInterpreted("t1", 1, "partial_answer"), 2)
    call.fire_due(3)  # b = x.arm(2, 1); x.fire(b, 3)
    current = call.token_of("reminder")
    assert current != prior
    call.send(PlaybackCompleted(prior), 3)
    assert call.rejected() == ["prompt_already_cancelled_before_playback"]
    assert call.c.state is State.PROMPTING
    call.send(PlaybackCompleted(current), 3)
    assert call.c.state is State.LISTENING
