"""The incident library runs as tests, and malformed incident files are refused clearly."""

import json

import pytest

from sessions.incidents import (
    IncidentError,
    VirtualRun,
    judge,
    library_paths,
    load_incident,
    parse_incident,
    run_incident,
)

LIBRARY = library_paths()

# the schedules design.md's incident library names, by the file that rehearses each
REQUIRED = {
    "speech_before_expiry",
    "reminder_then_resume",
    "hold_then_old_timeout",
    "duplicate_timeout",
    "missing_playback_completion",
    "closure_then_late_speech",
    "input_transport_fails",
    "input_transport_fails_during_hold",
    "deadline_no_timer_armed",
    "seven_waits",
    "wait_after_turn_closed",
    "failed_acknowledgement",
    "tool_past_filler",
}


def test_the_library_covers_every_schedule_in_the_design():
    assert REQUIRED <= {p.stem for p in LIBRARY}


@pytest.mark.parametrize("path", LIBRARY, ids=[p.stem for p in LIBRARY])
def test_library_incident_passes(path):
    incident = load_incident(path)
    assert incident.name == path.stem, "the file name is the incident's name"
    outcome = run_incident(incident)
    assert outcome.passed, "\n".join(outcome.failures)
    assert incident.prohibit, "every incident states what it prohibits"


def _minimal(**over) -> dict:
    data = {
        "schema": 1,
        "name": "tiny",
        "title": "a question and a silent caller",
        "schedule": [
            {"at": 0, "event": {"kind": "ask_question", "question": "q", "text": "What is your code?"}}
        ],
        "until": 10000,
        "expect": {"state": "prompting", "stage": "gentle_check"},
        "prohibit": [{"what": "a close", "match": {"effect": "RequestPrompt", "kind": "close"}}],
    }
    data.update(over)
    return data


def test_an_expectation_that_does_not_hold_fails_with_its_reason():
    outcome = run_incident(parse_incident(_minimal(expect={"state": "closed"}), "x.json"))
    assert not outcome.passed
    assert outcome.failures == ["expected state closed, got prompting"]


def test_a_prohibited_record_fails_the_incident():
    data = _minimal(
        prohibit=[{"what": "any reminder", "match": {"effect": "RequestPrompt", "kind": "reminder"}}]
    )
    outcome = run_incident(parse_incident(data, "x.json"))
    assert not outcome.passed
    assert outcome.failures[0].startswith("prohibited: any reminder")


def test_stepping_reaches_the_same_result_as_running():
    incident = load_incident(next(p for p in LIBRARY if p.stem == "seven_waits"))
    stepped = VirtualRun(incident)
    steps = 0
    while not stepped.done():
        stepped.step()
        steps += 1
    assert steps > len(incident.schedule)  # scripted steps plus endpoint reports and timers
    assert judge(stepped).passed
    assert stepped.records == run_incident(incident).records


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda d: d.pop("name"), "field name"),
        (lambda d: d.update(schema=9), "field schema"),
        (lambda d: d["schedule"][0]["event"].update(kind="ask"), "field schedule[0].event"),
        (lambda d: d["schedule"][0]["event"].pop("text"), "field schedule[0].event"),
        (lambda d: d["schedule"].append({"at": -1, "event": {"kind": "hangup"}}), "field schedule[1].at"),
        (lambda d: d["schedule"].append({"at": 5}), "field schedule[1]"),
        (lambda d: d["schedule"].append({"at": 5, "deliver_timer": {"timer": "alarm", "generation": 1}}), "field schedule[1].deliver_timer"),
        (lambda d: d.update(policy={"episode_ms": -5}), "field policy.episode_ms"),
        (lambda d: d.update(surprise=1), "field surprise"),
        (lambda d: d["expect"].update(sate="idle"), "field expect.sate"),
    ],
)
def test_a_malformed_incident_names_the_file_and_the_field(tmp_path, mutate, field):
    data = _minimal()
    mutate(data)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(data))
    with pytest.raises(IncidentError) as info:
        load_incident(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {field}"), message
    assert "\n" not in message


def test_invalid_json_names_the_line_and_column(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{\n  "schema": 1,\n  "name": oops\n}')
    with pytest.raises(IncidentError, match=r"broken.json: line 3 column 11: invalid JSON"):
        load_incident(path)


def test_every_pattern_names_fields_that_such_records_carry():
    """A prohibition with a misspelt field could never match: refuse it here."""
    fields_by_kind: dict[str, set[str]] = {}
    incidents = [load_incident(p) for p in LIBRARY]
    for incident in incidents:
        for record in run_incident(incident).records:
            label = record.get("kind") if record.get("effect") == "Trace" else record["effect"]
            fields_by_kind.setdefault(label, set()).update(record)
    for incident in incidents:
        patterns = [p.match for p in incident.prohibit] + list(incident.expect.records)
        for pattern in patterns:
            label = pattern.get("kind") if "effect" not in pattern or pattern["effect"] == "Trace" else pattern["effect"]
            assert label in fields_by_kind, f"{incident.name}: no record is ever a {label!r}"
            unknown = set(pattern) - fields_by_kind[label]
            assert not unknown, f"{incident.name}: {label} records never carry {sorted(unknown)}"
