"""Wording from the call's state: routes composed when spoken, no braces ever read aloud."""

from ladder import AskQuestion, Controller, PlaybackCompleted, RequestPrompt, SetRouteAvailability
from ladder.events import Announce, StartCall
from ladder.flow.runtime import FlowRuntime
from ladder.policy import LadderPolicy, Stage, join_offers
from sessions.flowfiles import load_flow


def reminders(c: Controller, until: float = 60_000) -> list[RequestPrompt]:
    """Walk the ladder in silence, every prompt completing at once; the reminders requested."""
    out = []
    now = 0.0
    while (due := c.next_deadline()) is not None and due <= until:
        now = due
        for effect in c.handle_timer(now):
            if isinstance(effect, RequestPrompt):
                out.append(effect)
                c.handle(PlaybackCompleted(effect.token), now + 10)
    return out


def asked(policy: LadderPolicy | None = None) -> Controller:
    c = Controller(policy)
    [prompt] = [e for e in c.handle(AskQuestion("q", "What is your reference code?"), now=0) if isinstance(e, RequestPrompt)]
    c.handle(PlaybackCompleted(prompt.token), now=1)
    return c


def test_the_alternative_route_is_composed_from_the_routes_available_now():
    said = [p.text for p in reminders(asked())]
    assert said[:2] == [
        "Take your time. Would you like more time, or shall I repeat the question?",
        "If you don't have the answer to hand, we can go on without it, or I can repeat the question.",
    ]


def test_switching_a_route_off_changes_what_the_agent_says_live():
    c = asked()
    c.handle(SetRouteAvailability("repeat", False), now=2)
    prompts = reminders(c)
    assert [p.text for p in prompts[:2]] == ["Take your time.", "If you don't have the answer to hand, we can go on without it."]
    assert [p.routes for p in prompts[:2]] == [(), ("go_on_without",)]


def test_with_no_route_left_the_sentence_is_dropped_and_an_empty_prompt_is_a_quiet_wait():
    c = asked()
    c.handle(SetRouteAvailability("repeat", False), now=2)
    c.handle(SetRouteAvailability("go_on_without", False), now=3)
    prompts = reminders(c)
    assert [p.stage for p in prompts] == ["gentle_check", "safe_close"]  # nothing left to say at alternative_route
    assert "{" not in " ".join(p.text for p in prompts)


def test_a_new_question_keeps_a_route_switched_off_during_the_call():
    c = asked()
    c.handle(SetRouteAvailability("repeat", False), now=2)
    c.use_policy(LadderPolicy())  # the next question's policy (a per-stage ladder)
    assert c.policy.route("repeat").available is False


def test_a_stage_may_word_a_route_its_own_way():
    policy = LadderPolicy(stages=(
        Stage(name="wait", wait_ms=100),
        Stage(name="offer", wait_ms=100, prompt="If you're not sure, {routes}.", routes=("repeat",),
              offers={"repeat": "I can read the code out again"}),
        Stage(name="close", wait_ms=100, prompt="Goodbye.", closes=True),
    ))
    assert reminders(asked(policy))[0].text == "If you're not sure, I can read the code out again."
    assert join_offers(["a", "b", "c"]) == "a, b, or c"


def test_an_unfilled_placeholder_is_never_read_aloud():
    c = Controller()
    [prompt] = [e for e in c.handle(Announce("Hello. Your code is {refernce_code}.", "greet"), now=0) if isinstance(e, RequestPrompt)]
    assert prompt.text == "Hello."
    runtime = FlowRuntime(load_flow("reference_code"))
    runtime.handle(StartCall(), 0)
    assert runtime._render("Thanks. I heard {reference_code}.") == "Thanks."  # no code yet
    runtime.state["reference_code"] = "4821"
    assert runtime._render("Thanks. I heard {reference_code}.") == "Thanks. I heard 4 8 2 1."


def test_ladder_wording_may_name_the_heard_value():
    runtime = FlowRuntime(load_flow("reference_code"))
    runtime.state["reference_code"] = "4821"
    policy = runtime.flow.policy_for("confirm_code", None)
    policy = policy.model_copy(update={"reprompt": "Was {reference_code} right? If you like, {routes}."})
    assert runtime._with_values(policy).reprompt == "Was 4 8 2 1 right? If you like, {routes}."
