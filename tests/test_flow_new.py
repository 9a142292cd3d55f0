"""`lull flow new`: a designer starts from a scaffold of their own slot, not a copy of the
sample; what it writes passes check and rehearses, and nothing that exists is overwritten."""

import json
import os
import subprocess

import pytest
from test_cli import LULL, lull

from ladder.flow.scaffold import scaffold_flow, scaffold_scenario
from sessions.flowfiles import check_data
from sessions.scenarios import load_scenario, run_scenario


@pytest.mark.parametrize("kind", ["digits", "number", "text", "yes_no"])
def test_every_kind_of_slot_scaffolds_a_flow_that_passes_check_and_its_scenario(kind, tmp_path):
    document = scaffold_flow("booking", "booking_reference", kind, label="booking reference")
    report = check_data(document, "booking.json")
    assert report.flow is not None and report.problems == [], [p.line() for p in report.problems]
    (tmp_path / "booking.json").write_text(json.dumps(document))
    scenario_path = tmp_path / "booking.scenario.json"
    scenario_path.write_text(json.dumps(scaffold_scenario(document, "booking.json")))
    outcome = run_scenario(load_scenario(scenario_path), scenario_path)
    assert outcome.passed, outcome.failures
    assert "reference code" not in json.dumps(document)


def test_the_command_writes_the_flow_and_its_scenario_which_pass(tmp_path):
    result = lull("flow", "new", str(tmp_path / "refill.json"), "--slot", "prescription_number",
                  "--type", "digits", "--min-length", "6", "--max-length", "7")
    assert result.returncode == 0, result.stderr
    flow = json.loads((tmp_path / "refill.json").read_text())
    assert flow["slots"]["prescription_number"] == {"type": "digits", "label": "prescription number", "kind": "find",
                                                    "min_length": 6, "max_length": 7}
    assert lull("flow", "check", str(tmp_path / "refill.json")).returncode == 0
    simulated = lull("simulate", str(tmp_path / "refill.scenario.json"))
    assert simulated.returncode == 0 and "1 of 1 scenarios passed" in simulated.stdout, simulated.stdout


def test_nothing_that_exists_is_overwritten_and_bad_flags_get_one_line(tmp_path):
    target = tmp_path / "mine.json"
    target.write_text("my own work")
    result = lull("flow", "new", str(target), "--slot", "code", "--type", "digits")
    assert result.returncode == 2 and "the file exists" in result.stderr
    assert target.read_text() == "my own work"
    for args, says in [
        (("--slot", "Bad Id"), "expected an id of lowercase letters"),
        (("--slot", "pin", "--type", "colour"), "expected one of digits, number, text, yes_no"),
        (("--slot", "pin", "--type", "digits", "--min-length", "8", "--max-length", "4"), "below --min-length 8"),
        (("--slot", "pin", "--type", "text", "--min-length", "3"), "are for digits"),
        ((), "--slot is needed"),
    ]:
        result = lull("flow", "new", str(tmp_path / "fresh.json"), *args)
        assert result.returncode == 2, (args, result.stdout)
        assert says in result.stderr and "Traceback" not in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "fresh.json").exists()


def test_at_a_terminal_what_is_not_given_is_asked_for(tmp_path):
    # a pseudo-terminal as stdin: the designer types the answers
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen([LULL, "flow", "new", str(tmp_path / "asked.json")], stdin=follower,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    os.close(follower)
    os.write(leader, b"member_id\ndigits\n5\n9\n")
    stdout, stderr = proc.communicate(timeout=60)
    os.close(leader)
    assert proc.returncode == 0, stderr.decode()
    flow = json.loads((tmp_path / "asked.json").read_text())
    assert flow["slots"]["member_id"] == {"type": "digits", "label": "member I D", "kind": "find", "min_length": 5, "max_length": 9}


@pytest.mark.parametrize("label", ["your pet's name", "the pet's name", "pet's name"])
def test_a_label_with_its_own_your_is_never_said_twice(label, tmp_path):
    """A designer writes the label as they would say it ("your pet's name"): the scaffold's
    wording and the ladder's put their own "your", "my" or "the" in front of the bare name."""
    document = scaffold_flow("vet", "pet_name", "text", label=label)
    report = check_data(document, "vet.json")
    assert report.flow is not None and report.problems == []
    ladder = report.flow.policy_for("ask_pet_name", None)
    said = json.dumps([document, scaffold_scenario(document, "vet.json")]) + " ".join(
        (s.prompt or "").replace("{slot}", ladder.slot) for s in ladder.stages) + ladder.close_deadline.replace("{slot}", ladder.slot)
    for doubled in ("your your", "my your", "the your", "caller's your", "your the", "my the", "the the"):
        assert doubled not in said.lower()
    assert "What is your pet's name?" in said and "I don't have my pet's name" in said
    assert document["slots"]["pet_name"]["label"] == label  # what the designer wrote is kept


def test_an_abbreviated_slot_id_is_spoken_in_full_words(tmp_path):
    # "card_no" said as the id reads is "What is your card no?": heard as "card, no"
    result = lull("flow", "new", str(tmp_path / "library.json"), "--slot", "card_no", "--type", "digits",
                  "--min-length", "8", "--max-length", "8")
    assert result.returncode == 0, result.stderr
    assert 'the agent says card_no as "card number"' in result.stdout
    flow = json.loads((tmp_path / "library.json").read_text())
    assert flow["slots"]["card_no"]["label"] == "card number"
    assert flow["stages"][1]["say"] == "What is your card number?"
    assert " no " not in json.dumps(flow).replace("card_no", "") and "card no" not in json.dumps(flow)
    assert scaffold_flow("x", "nhs_no", "digits")["slots"]["nhs_no"]["label"] == "N H S number"
    assert scaffold_flow("x", "pet_name", "text")["slots"]["pet_name"]["label"] == "pet name"


def test_a_number_is_asked_as_a_choice_and_a_value_as_a_value():
    def asked(kind: str, label: str) -> str:
        return scaffold_flow("x", "count", kind, label=label)["stages"][1]["say"]

    assert asked("number", "number of tickets") == "How many tickets would you like?"
    assert asked("number", "party size") == "What party size would you like?"
    assert asked("digits", "account number") == "What is your account number?"
    assert asked("text", "your pet's name") == "What is your pet's name?"


def _silent_wording(document: dict, stage: str) -> list[str]:
    report = check_data(document, "flow.json")
    assert report.flow is not None and report.problems == [], [p.line() for p in report.problems]
    ladder = report.flow.policy_for(stage, None)
    return [(s.prompt or "").replace("{slot}", ladder.slot) for s in ladder.stages if s.prompt]


def test_the_ladder_speaks_of_what_the_question_asks_for():
    """A name is known, not found ("to hand"); a day is chosen; a code is found. The slot's
    kind (written by `flow new`, or set by hand) picks the wording and the phrases."""
    from ladder.flow.understanding.shared_intents import flow_intents

    pet = scaffold_flow("vet", "pet_name", "text", label="pet's name")
    assert pet["slots"]["pet_name"]["kind"] == "know"
    said = " ".join(_silent_wording(pet, "ask_pet_name"))
    assert "If you're not sure of your pet's name" in said and "whenever you're ready" in said and "to hand" not in said
    report = check_data(pet, "vet.json")
    assert "I can't remember the pet's name" in flow_intents(report.flow.spec)["route:go_on"]

    day = scaffold_flow("visit", "visit_day", "text", label="day of the visit", kind="choose")
    said = " ".join(_silent_wording(day, "ask_visit_day"))
    assert "more time to decide" in said and "whenever you've decided" in said and "to hand" not in said

    code = scaffold_flow("refill", "prescription_number", "digits", label="prescription number")
    assert code["slots"]["prescription_number"]["kind"] == "find"
    assert "If you don't have your prescription number to hand" in " ".join(_silent_wording(code, "ask_prescription_number"))

    unset = scaffold_flow("vet", "pet_name", "text", label="pet's name")
    del unset["slots"]["pet_name"]["kind"]  # a flow written before kinds: text is found, as it was
    assert "to hand" in " ".join(_silent_wording(unset, "ask_pet_name"))


def test_flow_new_takes_a_kind_and_refuses_one_it_does_not_know(tmp_path):
    result = lull("flow", "new", str(tmp_path / "day.json"), "--slot", "visit_day", "--type", "text", "--kind", "choose")
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "day.json").read_text())["slots"]["visit_day"]["kind"] == "choose"
    bad = lull("flow", "new", str(tmp_path / "x.json"), "--slot", "a", "--type", "text", "--kind", "maybe")
    assert bad.returncode == 2 and "--kind 'maybe': expected find, choose or know" in bad.stderr
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("kind, slot_type, kept", [
    ("choose", "number", "whenever you've decided"),
    ("know", "text", "whenever you're ready"),
])
def test_editing_one_reminder_keeps_the_others_wording_for_the_kind_of_question(kind, slot_type, kept):
    """The prompts screen shows the flow's ladder and an edit copies its other stages into
    the file: on a flow whose question is a choice (or a name), they are that question's
    wording, so editing the alternative route leaves the close saying what it said."""
    from console.prompts import edited_data, prompt_items

    document = scaffold_flow("f", "value", slot_type, label="value")
    flow = check_data(document, "f.json").flow
    shown = {item.key: item.text for item in prompt_items(flow)}
    assert kept in shown["ladder:safe_close"]  # what the screen offers to edit is what is said
    edited = edited_data(document, {("ladder", "stages", 2, "prompt"): "If you are unsure, {routes}."}, flow)
    report = check_data(edited, "f.json")
    assert report.flow is not None and report.problems == []
    said = [s.prompt or "" for s in report.flow.policy_for("ask_value", None).stages]
    assert said[2] == "If you are unsure, {routes}." and kept in said[3]


def test_a_kind_on_a_yes_no_slot_is_flagged_and_removing_it_as_advised_clears_it():
    document = scaffold_flow("vet", "pet_name", "text", label="pet's name")
    document["slots"]["pet_name_confirmed"]["kind"] = "choose"
    warned = [p for p in check_data(document, "vet.json").problems if "changes nothing" in p.message]
    assert len(warned) == 1 and "remove 'kind'" in warned[0].message and warned[0].severity == "warning"
    del document["slots"]["pet_name_confirmed"]["kind"]  # the advice, followed
    assert check_data(document, "vet.json").problems == []
