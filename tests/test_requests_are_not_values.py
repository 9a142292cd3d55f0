"""At a question for a number or a yes/no, a request the matcher reads with confidence is
not the value, though a number or a yes/no word is in it: "one moment" at "how many?"
asks for time and books nobody; "hold on, not yet" at "is the light red?" is no "no".
(Found by the writer of the yardstick2 flows, who had to keep such words out of the
examples: `lull simulate` filled seats = 1 from "one moment".)"""

from pathlib import Path

import pytest

from ladder import PlaybackCompleted, RequestPrompt
from ladder.events import CallerUtterance, StartCall
from ladder.flow.runtime import FlowRuntime
from sessions.flowfiles import load_flow

FLOWS = Path(__file__).parent / "flows" / "yardstick2"


def asked(flow_name: str) -> FlowRuntime:
    """A call at the flow's first question, every prompt heard to its end."""
    runtime = FlowRuntime(load_flow(str(FLOWS / f"{flow_name}.json")))

    def take(effects, now):
        for effect in effects:
            if isinstance(effect, RequestPrompt):
                take(runtime.handle(PlaybackCompleted(effect.token), now), now)

    take(runtime.handle(StartCall(), 0), 0)
    while runtime.asking is None:
        take(runtime.handle_timer(runtime.next_deadline()), runtime.next_deadline())
    return runtime


@pytest.mark.parametrize("flow, slot, said, intent", [
    ("table_booking", "party_size", "one moment please", "wait_request"),
    ("table_booking", "party_size", "sorry can you say that one more time", "repeat_request"),
    ("bulky_waste", "item_count", "right I'm back, two secs", "ready"),
    ("broadband_fault", "router_red", "hold on, not yet, I'm going to look", "wait_request"),
])
def test_a_confident_request_is_not_the_value(flow, slot, said, intent):
    runtime = asked(flow)
    runtime.handle(CallerUtterance("user-1", 1, said, intent, 0.95), 1000)
    assert runtime.state.get(slot) is None


@pytest.mark.parametrize("flow, slot, said, intent, value", [
    ("table_booking", "party_size", "four of us", None, 4),
    ("table_booking", "party_size", "um hold on, it's six", "wait_request", 6),  # unsure: the number stands
    ("broadband_fault", "router_red", "yes go ahead it is red", "ready", True),  # "go ahead" with a yes is a yes
])
def test_an_answer_is_still_the_value(flow, slot, said, intent, value):
    runtime = asked(flow)
    runtime.handle(CallerUtterance("user-1", 1, said, intent, 0.95 if intent != "wait_request" else 0.5), 1000)
    assert runtime.state.get(slot) == value


@pytest.mark.parametrize("said, intent, score, filled", [
    ("i'd have to see when i'm off work first", "wait_request", 0.57, False),  # read back as the day before
    ("okay i've spoken to my wife she's got the rota in front of her", "ready", 0.6, False),
    ("a tuesday if you have one", "repeat_request", 0.6, True),  # other readings keep the 0.7 bar
    ("a tuesday if you have one", "route:online_form", 0.65, True),
    ("a tuesday if you have one", None, 0.4, True),
])
def test_at_a_text_question_asking_for_time_or_being_back_is_not_the_value(said, intent, score, filled):
    runtime = asked("vet_booking")
    runtime.handle(CallerUtterance("user-1", 1, said, intent, score), 1000)
    assert (runtime.state.get("visit_day") is not None) == filled
