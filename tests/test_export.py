"""Export (S7): a recording becomes an incident or a scenario that runs green."""

import json
from pathlib import Path

from sessions.export import export_incident, export_scenario
from sessions.incidents import parse_incident, run_incident
from sessions.scenarios import Scenario, load_scenario, run_scenario

SCENARIOS = Path(__file__).parent / "scenarios"


def recorded(tmp_path, name):
    path = SCENARIOS / f"{name}.json"
    run_scenario(load_scenario(path), path, record_to=tmp_path / name)
    return tmp_path / name


def test_a_flow_session_exports_as_an_incident_that_passes(tmp_path):
    folder = recorded(tmp_path, "default_hold_then_answer")
    document = export_incident(folder, "hold_regression")
    outcome = run_incident(parse_incident(json.loads(json.dumps(document)), "hold_regression.json"))
    assert outcome.passed, outcome.failures
    assert "acknowledgement" in document["expect"]["prompts"]
    assert document["expect"]["episode_outcomes"][0] == "explicit_wait"


def test_a_flow_session_exports_as_a_scenario_that_passes(tmp_path):
    folder = recorded(tmp_path, "default_silence_to_safe_close")
    document = export_scenario(folder, "silence_regression")
    scenario = Scenario.model_validate(document)
    outcome = run_scenario(scenario, tmp_path / "silence_regression.json")
    assert outcome.passed, outcome.failures
    assert document["steps"][-1]["expect"]["outcome"] == "closed_incomplete"


def test_the_exported_incident_catches_a_policy_change(tmp_path):
    folder = recorded(tmp_path, "default_silence_to_safe_close")
    document = export_incident(folder, "silence_regression")
    document["policy"]["stages"][1]["prompt"] = None  # a regression: the gentle check says nothing
    outcome = run_incident(parse_incident(document, "x.json"))
    assert not outcome.passed
