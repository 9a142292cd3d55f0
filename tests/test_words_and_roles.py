"""Routes that know what they are, and words true to what was heard (issue 27, items 3-4).

Each warning's advice is followed in a test, and the warning goes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ladder import AskQuestion, Controller, PlaybackCompleted
from ladder.events import TurnEnded, TurnInterpreted, TurnStarted
from ladder.flow.route_roles import read_route_roles
from ladder.flow.understanding.shared_intents import PERSON, flow_intents
from ladder.flow.slot_words import abbreviated, id_in_words
from ladder.policy import LadderPolicy
from sessions.flowfiles import check_data

YARDSTICK = Path(__file__).parent / "flows" / "yardstick"
FLOWS = [*sorted(YARDSTICK.glob("*.json")), *sorted((Path(__file__).parent / "flows").glob("*.json"))]


def _doc(name: str) -> dict:
    return json.loads((YARDSTICK / f"{name}.json").read_text())


def _check(doc: dict):
    return check_data(doc, "test flow")


def _warnings(report) -> list[str]:
    return [p.message for p in report.problems if p.severity == "warning"]


# -- routes' roles ---------------------------------------------------------------


def test_a_goto_route_whose_words_speak_of_staff_is_a_person_and_check_says_why():
    report = _check(_doc("water_account"))
    reading = report.flow.route_roles["billing_team"]
    assert reading.role == "person" and reading.shape == "go_on_without"
    assert "member of" in reading.reason
    assert any("billing_team" in w and '"role": "person"' in w for w in _warnings(report))


def test_following_the_role_advice_silences_the_warning_and_keeps_the_role():
    doc = _doc("water_account")
    next(r for r in doc["routes"] if r["id"] == "billing_team")["role"] = "person"
    report = _check(doc)
    assert not any("billing_team" in w for w in _warnings(report))
    assert report.flow.route_roles["billing_team"].role == "person"


def test_a_handoff_whose_words_say_go_on_without_is_warned_and_the_advice_works():
    doc = _doc("clinic_checkin")
    nurse = next(r for r in doc["routes"] if r["id"] == "nurse")
    nurse.update(label="skip it for now", promises="carry on without the reference", offer="we can skip it", mentions=[])
    doc["intents"]["route:nurse"] = ["skip it", "carry on without it", "I don't have it"]
    warned = [w for w in _warnings(_check(doc)) if "'nurse'" in w]
    assert warned and "it is a handoff" in warned[0]
    nurse["role"] = "person"
    assert not [w for w in _warnings(_check(doc)) if "'nurse'" in w]


def test_words_that_agree_with_the_shape_give_no_warning():
    for path in FLOWS:
        report = _check(json.loads(path.read_text()))
        assert report.flow is not None, path
        roles = {r: reading.role for r, reading in report.flow.route_roles.items()}
        assert "repeat" not in roles or roles["repeat"] == "repeat"
        if path.stem not in ("water_account", "coach_tickets"):  # the two whose person route is a goto
            assert not [w for w in _warnings(report) if "its shape reads as" in w], path


@pytest.mark.parametrize("path", FLOWS, ids=lambda p: p.stem)
def test_a_caller_asking_for_a_person_is_heard_as_the_flows_person_route_whatever_its_shape(path):
    doc = json.loads(path.read_text())
    report = _check(doc)
    people = [r for r, reading in report.flow.route_roles.items() if reading.role == "person"]
    assert people, f"{path.stem} has a person route"
    learned = flow_intents(report.flow.spec)
    assert set(PERSON) <= set(learned[f"route:{people[0]}"])
    for route, reading in report.flow.route_roles.items():
        if reading.role != "person":
            assert not set(PERSON) & set(learned.get(f"route:{route}", ())), route


def test_the_default_ladder_never_offers_a_person_as_going_on_without_the_value():
    flow = _check(_doc("coach_tickets")).flow
    policy = flow.policy_for("ask_seats", None)
    alternative = next(s for s in policy.stages if s.name == "alternative_route")
    assert "booking_staff" not in alternative.routes and "website" in alternative.routes


def test_reading_roles_is_pure_data_in_data_out():
    spec = _check(_doc("coach_tickets")).flow.spec
    assert read_route_roles(spec) == read_route_roles(spec)


# -- words true after half an answer ------------------------------------------------


def _partial_then_silence(policy: LadderPolicy, *, until: float = 60_000) -> list[tuple[str, str]]:
    c = Controller(policy)
    said: list[tuple[str, str]] = []

    def keep(effects):
        for e in effects:
            if type(e).__name__ == "RequestPrompt":
                said.append((e.kind, e.text))
                pending.append(e.token)

    pending: list[int] = []
    keep(c.handle(AskQuestion("member_number", "What is your member number?"), now=0))
    keep(c.handle(PlaybackCompleted(token=pending.pop()), now=1500))
    keep(c.handle(TurnStarted("t1", seq=1), now=3000))
    keep(c.handle(TurnEnded("t1", seq=1), now=4200))
    keep(c.handle(TurnInterpreted("t1", seq=1, intent="partial_answer", value="447"), now=4300))
    now = 4300.0
    while (due := c.next_deadline()) is not None and due <= until:
        now = due
        keep(c.handle_timer(now))
        while pending:  # every prompt plays in full, a second after it is asked
            token = pending.pop()
            now += 1000
            keep(c.handle(PlaybackCompleted(token=token), now=now))
    return said


def test_after_part_of_a_value_no_prompt_says_nothing_was_received():
    said = _partial_then_silence(LadderPolicy(slot="your member number"))
    texts = [t for _, t in said]
    assert "I've got the first three digits. What's the rest?" in texts
    assert any("the rest of your member number" in t for k, t in said if k == "reminder"), texts
    close = [t for k, t in said if k == "close"]
    assert close and close[-1].startswith("I only got part of your member number")
    assert not any("haven't received" in t for t in texts)


def test_the_deadline_close_after_part_of_a_value_says_part_came():
    said = _partial_then_silence(LadderPolicy(slot="your member number", episode_ms=12_000), until=20_000)
    close = [t for k, t in said if k == "close"]
    assert close and "I only got part of your member number" in close[-1]


def _digits_flow(ladder: dict) -> dict:
    return {"schema": 1, "name": "members", "stages": [
        {"id": "ask", "say": "What is your member number?", "collect": ["member_number"], "next": "bye"},
        {"id": "bye", "say": "Thanks. Goodbye.", "terminal": True}],
        "slots": {"member_number": {"type": "digits", "min_length": 6, "max_length": 6, "label": "member number"}},
        "ladder": ladder}


def test_the_lint_refuses_a_close_that_denies_receipt_where_part_may_have_come_and_its_advice_works():
    refused = _check(_digits_flow({"partial_close": None}))
    assert refused.flow is None
    message = next(p.message for p in refused.problems if p.severity == "error")
    assert "claims nothing was received" in message and "'partial_close'" in message
    fixed = _check(_digits_flow({"partial_close": "I only got part of {slot}, so I'll stop here. Call back any time."}))
    assert fixed.flow is not None


def test_a_partial_close_that_itself_denies_receipt_is_refused():
    refused = _check(_digits_flow({"partial_close": "I haven't received {slot}, so goodbye."}))
    assert refused.flow is None


# -- wording that fits the question ------------------------------------------------


def test_a_how_many_question_gets_wording_about_deciding_not_about_having_it_to_hand():
    flow = _check(_doc("coach_tickets")).flow
    policy = flow.policy_for("ask_seats", None)
    words = " ".join(s.prompt or "" for s in policy.stages)
    assert "to hand" not in words and "decide" in words
    assert policy.slot == "your number of seats"


def test_a_code_to_find_keeps_the_wording_about_having_it_to_hand():
    flow = _check(_doc("parcel_redelivery")).flow
    words = " ".join(s.prompt or "" for s in flow.policy_for("ask_tracking", None).stages)
    assert "to hand" in words


@pytest.mark.parametrize(("slot_id", "spoken", "abbrev"), [
    ("nhs_no", "N H S number", True), ("acct_ref", "account reference", True),
    ("prescription_number", "prescription number", False), ("memberNo", "member number", True),
])
def test_an_abbreviated_id_is_spoken_as_words(slot_id, spoken, abbrev):
    assert id_in_words(slot_id) == spoken
    assert abbreviated(slot_id) is abbrev


def test_flow_check_advises_a_label_for_an_abbreviated_id_and_the_advice_works():
    doc = _digits_flow({})
    doc["slots"] = {"mem_no": {"type": "digits", "min_length": 6, "max_length": 6}}
    doc["stages"][0]["collect"] = ["mem_no"]
    report = _check(doc)
    assert any("mem_no" in w and "label" in w for w in _warnings(report))
    assert report.flow.policy_for("ask", None).slot == "your membership number"
    doc["slots"]["mem_no"]["label"] = "member number"
    assert not any("mem_no" in w for w in _warnings(_check(doc)))


def test_an_offer_that_names_a_switched_off_route_is_warned_and_the_advice_works():
    doc = _doc("school_absence")
    next(r for r in doc["routes"] if r["id"] == "office")["mentions"] = ["the office", "a person"]
    for stage in doc["stages"]:
        stage["say"] = stage["say"].replace("email the office", "send us an email")
    warned = [w for w in _warnings(_check(doc)) if "names route 'office'" in w]
    assert warned, _warnings(_check(doc))
    next(r for r in doc["routes"] if r["id"] == "email")["offer"] = "you can email us once you know"
    assert not [w for w in _warnings(_check(doc)) if "names route 'office'" in w]


# -- a caller who asks for a person, on every flow of the team's own ---------------


@pytest.mark.parametrize("path", sorted(YARDSTICK.glob("*.json")), ids=lambda p: p.stem)
def test_a_caller_asking_for_a_person_reaches_the_person_route_and_hears_only_what_is_true(path):
    # on the virtual clock with the simulator's matcher: whatever shape the person route
    # has (a hand-off, a goto to a stage that passes the caller on, switched off), the
    # caller reaches it or is told truly that it is not on this call, and is never told
    # afterwards that they were not heard
    from sessions.scenarios import Scenario, Simulation, load_flow

    flow = load_flow(str(path))
    person = next(r for r, reading in flow.route_roles.items() if reading.role == "person")
    route = next(r for r in flow.ladder.routes if r.id == person)
    scenario = Scenario.model_validate({
        "schema": 1, "name": path.stem, "title": "a caller asks for a person", "flow": str(path),
        "steps": [{"say": "can I speak to a real person"}, {"silence_ms": 20_000}, {"expect": {}}]})
    sim = Simulation(scenario, flow)
    sim.run()
    records = sim.journal()
    said = [(r["kind"], r["text"]) for r in records if r.get("effect") == "RequestPrompt"]
    heard = next(r for r in records if r.get("kind") == "caller_utterance" and "event" in r)
    assert heard["event"]["intent"] == f"route:{person}", (heard, said)
    taken = [r["route"] for r in records if r.get("effect") == "RouteTaken"]
    after = said[next(i for i, (k, _) in enumerate(said) if k == "question") + 1:]
    if route.available:
        assert taken == [person], said
        assert all(kind != "reprompt" for kind, _ in after), after  # no "Sorry, I missed that"
    else:
        assert taken == [] and after[0][0] == "route_unavailable", after
        assert "can't" in after[0][1] and route.label.split()[-1] in after[0][1], after
