"""`lull sessions coverage`: per flow, how often each stage, ladder stage, route and
intent was reached over a corpus of journals, and which never were."""

import json
from pathlib import Path

from test_cli import lull

from sessions.coverage import INCIDENTS, coverage
from sessions.incidents import library_paths, load_incident, run_incident
from sessions.scenarios import load_scenario, run_scenario

SCENARIOS = Path(__file__).parent / "scenarios"


def test_over_the_incident_library_it_names_what_the_library_never_reaches(tmp_path):
    for path in library_paths():
        run_incident(load_incident(path), record_to=tmp_path / path.stem)
    data = coverage([tmp_path]).to_dict()
    assert data["sessions"] == len(library_paths()) and data["unreadable"] == []
    ladder = data["flows"][INCIDENTS]
    assert set(ladder) >= {"stages", "ladder_stages", "routes", "intents", "never"}
    assert ladder["ladder_stages"]["quiet_wait"] == len(library_paths())  # every episode starts there
    assert all(ladder["ladder_stages"][s] > 0 for s in ("gentle_check", "alternative_route", "safe_close"))
    assert ladder["routes"]["go_on_without"] == 1  # alternative_route_honest takes it
    assert "transfer" in ladder["never"]["routes"]  # unavailable in every incident: never taken
    assert ladder["intents"]["wait_request"] > 0 and "decline" in ladder["never"]["intents"]


def test_a_flows_journals_count_its_stages_and_name_the_ones_never_entered(tmp_path):
    for name in ("pharmacy_silence_speaks_its_own_words", "pharmacy_partial_answer_is_acknowledged"):
        path = SCENARIOS / f"{name}.json"
        run_scenario(load_scenario(path), path, record_to=tmp_path / name)
    flow = coverage([tmp_path]).to_dict()["flows"]["pharmacy_refill"]
    assert flow["sessions"] == 2
    assert flow["stages"]["greet"] == 2 and flow["stages"]["ask_rx"] == 2 and flow["stages"]["confirm_rx"] == 1
    assert {"refill", "close_sent", "close_no_rx", "close_refill_failed"} <= set(flow["never"]["stages"])
    assert flow["ladder_stages"]["gentle_check"] == 2 and flow["ladder_stages"]["safe_close"] == 1
    assert {"no_rx", "pharmacist"} <= set(flow["never"]["routes"])
    assert "route:no_rx" in flow["intents"]  # known from the flow, reached or not


def test_the_command_prints_json_and_refuses_what_is_not_a_corpus(tmp_path):
    path = SCENARIOS / "pharmacy_silence_speaks_its_own_words.json"
    run_scenario(load_scenario(path), path, record_to=tmp_path / "take")
    result = lull("sessions", "coverage", str(tmp_path), "--json")
    assert result.returncode == 0, result.stderr
    flow = json.loads(result.stdout)["flows"]["pharmacy_refill"]
    assert set(flow) == {"sessions", "stages", "ladder_stages", "routes", "intents", "never", "model_readings"}
    table = lull("sessions", "coverage", str(tmp_path))
    assert table.returncode == 0 and "close_no_rx" in table.stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    for args, code, says in [((str(empty),), 1, "no session folders"), ((str(tmp_path / "nope"),), 2, "no such session"),
                             ((str(path),), 2, "not a folder")]:
        bad = lull("sessions", "coverage", *args)
        assert bad.returncode == code and says in bad.stderr and "Traceback" not in bad.stderr, bad.stderr


def test_a_yes_to_a_yes_no_question_counts_as_an_answer_not_as_the_matchers_nearest_intent(tmp_path):
    path = SCENARIOS / "default_answer_at_once.json"
    run_scenario(load_scenario(path), path, record_to=tmp_path / "s")
    lines = [json.loads(line) for line in (tmp_path / "s" / "journal.jsonl").read_text().splitlines()]
    nearest = [r["detail"]["matched"] for r in lines if r.get("kind") == "utterance" and r["reason"] == "answer"
               and (r.get("detail") or {}).get("matched")]
    assert nearest, "the confirmation's yes had a nearest intent (the case under test)"
    flow = coverage([tmp_path]).to_dict()["flows"]["reference_code"]
    assert all(flow["intents"].get(name, 0) == 0 for name in nearest), flow["intents"]
