"""Every warning `lull flow check` gives, followed: the advice applied to a designer's
own flow, the warning gone, and the flow rehearsed (a scripted caller on the virtual
clock) to show that the result behaves. A warning whose advice made a flow misbehave
(a route's destination given an 'after' spoke over the confirmation) is a defect."""

import copy
import json
from pathlib import Path

from sessions.flowfiles import check_data
from sessions.scenarios import Scenario, run_scenario

PHARMACY = json.loads((Path(__file__).parent / "flows" / "pharmacy_refill.json").read_text())


def flow(change=None) -> dict:
    data = copy.deepcopy(PHARMACY)
    if change is not None:
        change(data)
    return data


def stage(data: dict, sid: str) -> dict:
    return next(s for s in data["stages"] if s["id"] == sid)


def warnings(data: dict) -> list[str]:
    report = check_data(data, "flow.json")
    assert report.flow is not None, [p.line() for p in report.problems]
    return [p.message for p in report.problems if p.severity == "warning"]


def rehearse(data: dict, *steps: dict) -> list[tuple[str, str | None, str]]:
    """The prompts requested, in order (kind, ladder stage, text), when the caller does `steps`."""
    scenario = Scenario.model_validate({"schema": 1, "name": "advice", "title": "advice", "flow": data, "steps": list(steps)})
    outcome = run_scenario(scenario)
    assert outcome.passed, outcome.failures
    return [(r["kind"], r.get("stage"), r["text"]) for r in outcome.call.records if r.get("effect") == "RequestPrompt"]


def texts(prompts) -> list[str]:
    return [text for _, _, text in prompts]


SILENCE = {"silence_ms": 90_000}


def test_the_flow_itself_warns_of_nothing():
    assert warnings(flow()) == []


def test_two_stages_at_the_start_put_in_the_chain_as_advised_play_one_after_the_other():
    def stray(d):
        d["stages"].insert(1, {"id": "hours", "say": "The pharmacy is open from nine to six.", "next": "ask_rx"})

    [warning] = warnings(flow(stray))
    assert "starts at 2 stages at once (greet, hours)" in warning
    assert "make each the 'next' of the stage it follows, with that stage's old 'next' as its own" in warning

    def advised(d):
        stray(d)
        old = stage(d, "greet")["next"]
        stage(d, "greet")["next"] = "hours"
        stage(d, "hours")["next"] = old

    assert warnings(flow(advised)) == []
    said = texts(rehearse(flow(advised), SILENCE))
    assert said[:3] == [
        "Hello, you've reached the pharmacy refill line.",
        "The pharmacy is open from nine to six.",
        "What is your prescription number? It's on the label of the bottle.",
    ]


def test_a_route_destination_that_also_comes_after_a_stage_loses_its_after_as_advised():
    def after(d):
        stage(d, "close_no_rx")["after"] = ["ask_rx"]
        stage(d, "ask_rx")["repair"].pop("escalate_to")

    [warning] = warnings(flow(after))
    assert "stage 'close_no_rx' is where route 'no_rx' leads, and it also comes after 'ask_rx'" in warning
    # what the designer in the report heard: the route's goodbye right after the read-back
    heard = texts(rehearse(flow(after), {"say": "one two three four five six"}, {"silence_ms": 3000}))
    assert any(t.startswith("No problem. Without the prescription number") for t in heard)

    def advised(d):
        after(d)
        stage(d, "close_no_rx").pop("after")

    assert warnings(flow(advised)) == []
    answered = texts(rehearse(flow(advised), {"say": "one two three four five six"}, {"silence_ms": 3000}))
    assert "I heard 1 2 3 4 5 6. Is that right?" in answered
    assert not any(t.startswith("No problem.") for t in answered)
    routed = texts(rehearse(flow(advised), {"say": "I don't have the number"}, {"silence_ms": 3000}))
    assert routed[-1].startswith("No problem. Without the prescription number I can't order a refill")


def test_a_safety_intent_without_examples_given_some_as_advised_hands_off():
    def policy(d):
        d["policies"].append({"kind": "safety_handoff", "intents": ["emergency"],
                              "say": "I'm going to stop here. If this is an emergency, please call emergency services now."})

    [warning] = warnings(flow(policy))
    assert "intent 'emergency' has no example phrases" in warning and '"emergency": ["..."]' in warning

    def advised(d):
        policy(d)
        d["intents"]["emergency"] = ["I need an ambulance", "this is an emergency", "someone has collapsed",
                                     "I took too many tablets", "I can't breathe", "call an ambulance",
                                     "I think I'm having a heart attack", "my child swallowed the pills"]

    assert warnings(flow(advised)) == []
    said = texts(rehearse(flow(advised), {"say": "I took too many tablets"}, {"silence_ms": 2000}))
    assert said[-1] == "I'm going to stop here. If this is an emergency, please call emergency services now."


def test_wording_for_a_ladder_stage_that_does_not_exist_named_as_advised_is_spoken():
    def typo(d):
        stage(d, "ask_rx")["ladder"] = {"prompts": {"gentle_chek": "Take your time. The number is on the bottle's label."}}

    [warning] = warnings(flow(typo))
    assert "the ladder has no stage 'gentle_chek'" in warning and "'gentle_check'" in warning

    def advised(d):
        stage(d, "ask_rx")["ladder"] = {"prompts": {"gentle_check": "Take your time. The number is on the bottle's label."}}

    assert warnings(flow(advised)) == []
    prompts = rehearse(flow(advised), SILENCE)
    assert ("reminder", "gentle_check", "Take your time. The number is on the bottle's label.") in prompts


def explicit_ladder(d, alternative_routes, alternative_prompt="If you'd rather, {routes}."):
    d["ladder"] = {"stages": [
        {"name": "quiet_wait", "wait_ms": 8000},
        {"name": "gentle_check", "wait_ms": 10000, "prompt": "Take your time.", "routes": []},
        {"name": "alternative_route", "wait_ms": 10000, "prompt": alternative_prompt, "routes": alternative_routes},
        {"name": "safe_close", "wait_ms": 4000, "closes": True,
         "prompt": "I haven't received {slot}, so I'll end the call here."},
    ]}


def test_an_unavailable_route_on_a_stage_switched_on_or_left_out_as_advised_is_offered_truthfully():
    def listed(d):
        explicit_ladder(d, ["no_rx", "pharmacist"])

    [warning] = warnings(flow(listed))
    assert "lists unavailable route 'pharmacist', so it is not offered" in warning

    def switched_on(d):
        listed(d)
        next(r for r in d["routes"] if r["id"] == "pharmacist")["available"] = True

    assert warnings(flow(switched_on)) == []
    offer = [t for k, s, t in rehearse(flow(switched_on), SILENCE) if s == "alternative_route"]
    assert offer == ["If you'd rather, we can finish without it and the pharmacist can help you in person, "
                     "or I can put you through to the pharmacist."]

    def left_out(d):
        explicit_ladder(d, ["no_rx"])

    assert warnings(flow(left_out)) == []
    offer = [t for k, s, t in rehearse(flow(left_out), SILENCE) if s == "alternative_route"]
    assert offer == ["If you'd rather, we can finish without it and the pharmacist can help you in person."]


def test_a_routes_sentence_with_no_route_available_is_spoken_once_one_is_switched_on():
    def none_on(d):
        explicit_ladder(d, ["pharmacist"])

    found = warnings(flow(none_on))
    assert any("none of its routes is available, so the sentence with {routes} is left out" in w for w in found)
    assert [t for k, s, t in rehearse(flow(none_on), SILENCE) if s == "alternative_route"] == []

    def switched_on(d):
        none_on(d)
        next(r for r in d["routes"] if r["id"] == "pharmacist")["available"] = True

    assert warnings(flow(switched_on)) == []
    offer = [t for k, s, t in rehearse(flow(switched_on), SILENCE) if s == "alternative_route"]
    assert offer == ["If you'd rather, I can put you through to the pharmacist."]


def test_wording_that_blames_the_caller_reworded_as_advised_is_what_an_unclear_turn_hears():
    def blaming(d):
        stage(d, "ask_rx")["ladder"] = {"reprompt": "You didn't say a number. Say the prescription number again."}

    [warning] = warnings(flow(blaming))
    assert "blames the caller" in warning and "not what the caller did wrong" in warning

    def advised(d):
        stage(d, "ask_rx")["ladder"] = {"reprompt": "Sorry, I didn't catch a number. Could you say the prescription number again?"}

    assert warnings(flow(advised)) == []
    said = texts(rehearse(flow(advised), {"say": "purple elephants dancing"}, {"silence_ms": 3000}))
    assert "Sorry, I didn't catch a number. Could you say the prescription number again?" in said


def test_a_prompt_longer_than_its_wait_given_a_longer_wait_as_advised_plays_before_the_next_stage():
    long = ("Take your time. It's printed on the white label of the bottle or the box, usually just "
            "under the pharmacy's name, and it has six or seven digits in it.")

    def too_long(d):
        explicit_ladder(d, ["no_rx"])
        d["ladder"]["stages"][1].update(prompt=long, wait_ms=5000)

    [warning] = warnings(flow(too_long))
    assert "longer than the stage's 5s wait; shorten it or give the stage a longer 'wait_ms'" in warning

    def advised(d):
        too_long(d)
        d["ladder"]["stages"][1]["wait_ms"] = 15000

    assert warnings(flow(advised)) == []
    scenario = Scenario.model_validate({"schema": 1, "name": "advice", "title": "advice", "flow": flow(advised),
                                        "steps": [SILENCE]})
    outcome = run_scenario(scenario)
    records = outcome.call.records
    gentle = next(r for r in records if r.get("effect") == "RequestPrompt" and r.get("stage") == "gentle_check")
    ended = next(r for r in records if r.get("kind") == "prompt_completed" and r.get("token") == gentle["token"])
    armed = next(r for r in records if r.get("kind") == "window_armed" and r["at"] >= ended["at"])
    assert armed["due"] - ended["at"] == 15000  # the full new wait, from the prompt's end
