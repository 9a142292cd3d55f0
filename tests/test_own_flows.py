"""Flows nobody on the project wrote: the default ladder speaks of their own slot by its
spoken name, offers their own routes, and the lint refuses wording about things they lack."""

import json
from pathlib import Path

import pytest

from ladder import AskQuestion, Controller, PlaybackCompleted, RequestPrompt
from ladder.flow.lint import THING_NOUNS, flow_vocabulary
from ladder.policy import LadderPolicy, Route, route_role
from sessions.flowfiles import check_data, load_flow

FLOWS = Path(__file__).parent / "flows"
OWN_FLOWS = sorted(FLOWS.glob("*.json"))


def spoken_to_a_silent_caller(flow, until_ms: float = 120_000) -> list[str]:
    """Every prompt a silent caller hears, start to close (each plays at once)."""
    from ladder.events import StartCall
    from ladder.flow.runtime import FlowRuntime

    runtime = FlowRuntime(flow)
    said: list[str] = []

    def take(effects, now):
        for effect in effects:
            if isinstance(effect, RequestPrompt):
                said.append(effect.text)
                take(runtime.handle(PlaybackCompleted(effect.token), now + 1), now + 1)

    take(runtime.handle(StartCall(), 0), 0)
    now = 0.0
    while not runtime.ended and (due := runtime.next_deadline()) is not None and due <= until_ms:
        now = due
        take(runtime.handle_timer(now), now)
    return said


@pytest.mark.parametrize("path", OWN_FLOWS, ids=[p.stem for p in OWN_FLOWS])
def test_an_own_flow_loads_clean_and_a_silent_caller_hears_only_its_own_words(path):
    flow = load_flow(str(path))
    assert flow.warnings == []
    said = spoken_to_a_silent_caller(flow)
    assert len(said) >= 4, said  # greeting or question, the reminders, the close
    vocabulary = flow_vocabulary(flow)
    for text in said:
        words = {w.strip("'") for w in text.lower().replace(",", " ").replace(".", " ").replace("?", " ").split()}
        assert not (words & THING_NOUNS) - vocabulary, text
        assert "{" not in text and "reference code" not in text.lower(), text


def test_the_issue_flow_with_its_own_route_id_compiles_and_offers_that_route():
    flow = load_flow(str(FLOWS / "pharmacy_refill.json"))
    stage = next(s for s in flow.policy_for("ask_rx", None).stages if s.name == "alternative_route")
    assert stage.routes == ("no_rx", "repeat")
    assert flow.policy_for("ask_rx", None).slot == "your prescription number"


def test_the_sample_flows_wording_copied_into_another_flow_is_refused():
    data = json.loads((FLOWS / "pharmacy_refill.json").read_text())
    data["ladder"] = {"close_deadline": "I'll end the call here. The reference code hasn't been received."}
    report = check_data(data, "pharmacy.json")
    assert report.flow is None
    [error] = report.errors
    assert error.path == ("ladder", "close_deadline")
    assert "'reference', 'code'" in error.message and "{slot}" in error.message
    # once the flow names the thing, the wording is its own (and judged as such: at the
    # confirmation the number was received, so "hasn't been received" is refused there)
    data["slots"]["rx_number"]["mentions"] = ["reference code"]
    messages = [p.message for p in check_data(data, "pharmacy.json").errors]
    assert messages and not any("neither collects nor names" in m for m in messages)


def test_a_slot_without_a_label_is_spoken_of_by_its_id_in_words():
    data = json.loads((FLOWS / "pharmacy_refill.json").read_text())
    del data["slots"]["rx_number"]["label"]
    report = check_data(data, "pharmacy.json")
    # "rx" is an abbreviation: spoken as the word, and flow check advises a label
    assert report.flow.policy_for("ask_rx", None).slot == "your prescription number"
    assert any("'rx_number' has no 'label'" in w.message for w in report.warnings)
    data["slots"]["refill_code"] = {"type": "digits"}
    data["stages"][1]["collect"] = ["refill_code"]
    data["stages"][2]["say"] = "I heard {refill_code}. Is that right?"
    data["stages"][3]["call"]["args"]["rx"] = "{refill_code}"
    data["policies"] = [{"kind": "redact", "keys": ["refill_code"]}] if "policies" in data else []
    flow = check_data(data, "pharmacy.json").flow
    assert flow.policy_for("ask_rx", None).slot == "your refill code"  # words already: as they are


def test_a_yes_no_question_gets_the_default_ladder_about_a_yes_or_a_no():
    flow = load_flow(str(FLOWS / "pharmacy_refill.json"))
    prompts = {s.name: s.prompt for s in flow.policy_for("confirm_rx", None).stages}
    assert prompts["gentle_check"] == "Take your time. Please say yes or no."
    assert prompts["alternative_route"] == "If you're not sure, {routes}."
    assert "yes or a no" in prompts["safe_close"]


def test_without_a_route_to_go_on_the_alternative_offers_only_a_repeat_and_without_any_route_it_still_does():
    data = json.loads((FLOWS / "pharmacy_refill.json").read_text())
    data["routes"] = [r for r in data["routes"] if r["id"] != "no_rx"]
    del data["intents"]["route:no_rx"]
    data["stages"] = [s for s in data["stages"] if s["id"] != "close_no_rx"]
    data["stages"][1]["repair"].pop("escalate_to")
    flow = check_data(data, "pharmacy.json").flow
    assert flow is not None
    stage = next(s for s in flow.policy_for("ask_rx", None).stages if s.name == "alternative_route")
    assert (stage.prompt, stage.routes) == ("If you'd like, {routes}.", ("repeat",))
    data["routes"] = []
    del data["intents"]["route:pharmacist"]
    flow = check_data(data, "pharmacy.json").flow
    assert [r.id for r in flow.ladder.routes] == ["repeat"]
    said = spoken_to_a_silent_caller(flow)
    assert "If you'd like, I can repeat the question." in said


def test_a_route_says_what_it_is_for_or_its_shape_does():
    assert route_role(Route(id="r", label="again", action="restate")) == "repeat"
    assert route_role(Route(id="p", label="a person", handoff=True)) == "person"
    assert route_role(Route(id="n", label="skip it", goto="close")) == "go_on_without"
    assert route_role(Route(id="x", label="something")) is None
    assert route_role(Route(id="x", label="something", role="go_on_without")) == "go_on_without"


def test_the_bare_core_speaks_of_the_answer_and_never_of_a_flows_things():
    c = Controller(LadderPolicy())
    [ask] = [e for e in c.handle(AskQuestion("q", "What's the number?"), 0) if isinstance(e, RequestPrompt)]
    c.handle(PlaybackCompleted(ask.token), 1)
    said = []
    while (due := c.next_deadline()) is not None:
        for effect in c.handle_timer(due):
            if isinstance(effect, RequestPrompt):
                said.append(effect.text)
                c.handle(PlaybackCompleted(effect.token), due + 1)
    text = " ".join(said).lower()
    assert "code" not in text and "reference" not in text
    assert "If you don't have the answer to hand, we can go on without it, or I can repeat the question." in said


def test_wording_that_promises_a_route_the_flow_does_not_have_is_refused():
    data = json.loads((FLOWS / "card_activation.json").read_text())
    data["routes"] = [r for r in data["routes"] if r["id"] != "agent"]
    del data["intents"]["route:agent"]
    data["ladder"] = {"close_deadline": "I'll end the call here. Next time I can transfer you to a person."}
    [error] = check_data(data, "card.json").errors
    assert error.path == ("ladder", "close_deadline")
    assert "promises 'transfer to a person', but this flow has no route for it" in error.message
    data = json.loads((FLOWS / "pharmacy_refill.json").read_text())
    data["routes"] = [r for r in data["routes"] if r["id"] != "no_rx"]
    del data["intents"]["route:no_rx"]
    data["stages"] = [s for s in data["stages"] if s["id"] != "close_no_rx"]
    data["stages"][1]["repair"].pop("escalate_to")
    data["ladder"] = {"reprompt": "Sorry, I missed that. We can go on without it if you like."}
    [error] = check_data(data, "pharmacy.json").errors
    assert "promises 'go on without it'" in error.message
