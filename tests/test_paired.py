"""Paired replay (S4): a changed ladder wait shows up per episode, and the report says what it tests."""

import json
from pathlib import Path

from sessions.flowfiles import check_data, library_flow_path
from sessions.paired import CAVEAT, paired_replay
from sessions.scenarios import load_scenario, run_scenario

SCENARIOS = Path(__file__).parent / "scenarios"


def test_a_longer_gentle_check_wait_moves_the_next_reminder_and_nothing_else(tmp_path):
    path = SCENARIOS / "default_silence_to_safe_close.json"
    run_scenario(load_scenario(path), path, record_to=tmp_path / "s")
    same = paired_replay(tmp_path / "s")
    assert same.changed == []  # the recorded policy reproduces itself
    data = json.loads(library_flow_path("reference_code").read_text())
    data["ladder"] = {"stages": [
        {"name": "quiet_wait", "wait_ms": 8000},
        {"name": "gentle_check", "wait_ms": 15000,
         "prompt": "Take your time. Would you like more time, or shall I repeat the question?"},
        {"name": "alternative_route", "wait_ms": 10000,
         "prompt": "If the code isn't to hand, we can carry on without it, or I can repeat the question.",
         "routes": ["repeat", "continue_without_code"]},
        {"name": "safe_close", "wait_ms": 4000,
         "prompt": "I haven't received the reference code, so nothing has been changed. You can call back whenever you have it.",
         "closes": True},
    ]}
    report = paired_replay(tmp_path / "s", flow=check_data(data, "longer").flow)
    [diff] = report.changed
    before = dict(diff.before.prompts)
    after = dict(diff.after.prompts)
    assert after["gentle_check"] == before["gentle_check"]  # the same first reminder
    assert after["alternative_route"] - before["alternative_route"] == 5000  # five seconds later
    assert report.caveat == CAVEAT and "not caller behaviour" in report.caveat
