"""Flow files: the compiler's checks, the text helpers, timing merge, positions, schema."""

import copy
import json

import pytest

from ladder.flow.compile import compile_flow, merge_timing
from ladder.flow.locate import value_positions
from ladder.flow.spec import FlowSpec, Timing, flow_schema
from ladder.flow.understanding.text import (
    LexicalMatcher,
    parse_digits,
    parse_number,
    parse_text,
    parse_yes_no,
    verbatim_passes,
    word_similarity,
)
from sessions.flowfiles import check_text, library_flow_path

DEFAULT = json.loads(library_flow_path("reference_code").read_text())


def check(data: dict):
    return check_text(json.dumps(data, indent=2), "flow.json")


def broken(mutate) -> list[str]:
    data = copy.deepcopy(DEFAULT)
    mutate(data)
    return [p.line() for p in check(data).errors]


def stage(data, sid):
    return next(s for s in data["stages"] if s["id"] == sid)


def test_the_default_flow_compiles_clean():
    report = check(DEFAULT)
    assert report.flow is not None and report.problems == []
    assert report.flow.main.roots() == ["greet"]
    assert report.flow.corrections["reference_code"] == ["code_confirmed"]


def test_a_commit_policy_for_a_missing_tool_is_refused_at_load():
    data = copy.deepcopy(DEFAULT)
    data["policies"][1]["tool"] = "charge_card"
    text = json.dumps(data, indent=2)
    report = check_text(text, "flow.json")
    assert report.flow is None
    [error] = report.errors
    line_no = next(i for i, line in enumerate(text.splitlines(), 1) if '"charge_card"' in line)
    column = text.splitlines()[line_no - 1].index('"charge_card"') + 1
    assert error.line() == (
        f"flow.json:{line_no}:{column}: error: policies[1].tool: "
        "commit policy names tool 'charge_card', which the flow does not declare"
    )


@pytest.mark.parametrize(
    "mutate, where, says",
    [
        (lambda d: stage(d, "lookup")["repair"].update(escalate_to="nowhere"), "stages[4].repair.escalate_to", "unknown stage 'nowhere'"),
        (lambda d: stage(d, "lookup")["commit"].update(tool="charge"), "stages[4].commit.tool", "not declared in 'tools'"),
        (lambda d: stage(d, "lookup").update(allow=["lookup_reference", "sms"]), "stages[4].allow[1]", "tool 'sms' is not declared"),
        (lambda d: stage(d, "close_found").update(next="greet"), "stages[5].next", "terminal stage 'close_found' cannot lead anywhere"),
        (lambda d: stage(d, "ask_code").update(collect=["reference_number"]), "stages[2].collect", "slot 'reference_number' is collected but not declared"),
        (lambda d: d["stages"].append({"id": "orphan", "say": "Hi.", "after": ["orphan2"]}), "stages[8].after", "unknown stage 'orphan2'"),
        (lambda d: d["stages"].append({"id": "orphan", "say": "x", "after": ["orphan"]}), "stages[8].after[0]", "stage 'orphan' comes after itself"),
        (lambda d: d["stages"].extend([
            {"id": "a", "say": "x", "next": "end", "repair": {"escalate_to": "b"}},
            {"id": "b", "say": "x", "next": "end", "repair": {"escalate_to": "a"}},
            {"id": "end", "say": "x", "terminal": True}]), "stages[8]", "stage 'a' is unreachable"),
        (lambda d: d.update(ladder={"episode_ms": -1}), "ladder.episode_ms", "greater than 0"),
        (lambda d: d.update(ladder={"stages": [
            {"name": "quiet_wait", "wait_ms": 8000},
            {"name": "offer", "wait_ms": 8000, "prompt": "I can transfer you to a person if you like."},
            {"name": "close", "wait_ms": 1000, "prompt": "Goodbye.", "closes": True}]}),
         "ladder.stages[1].prompt", "promises 'transfer to a person' (route 'transfer'), which is not available"),
        (lambda d: stage(d, "ask_code").update(colect=["x"]), "stages[2].colect", "unknown field"),
        (lambda d: stage(d, "ask_code").pop("id"), "stages[2].id", "required field is missing"),
    ],
)
def test_a_broken_flow_names_the_path_line_and_what_was_expected(mutate, where, says):
    errors = broken(mutate)
    assert errors, "the flow should not compile"
    first = errors[0]
    assert f": error: {where}: " in first and says in first, first
    line, col = first.split(":")[1:3]
    assert int(line) > 1 and int(col) >= 1


def test_an_unavailable_route_listed_by_a_stage_is_a_warning_not_an_error():
    data = copy.deepcopy(DEFAULT)
    data["ladder"] = {"stages": [
        {"name": "quiet_wait", "wait_ms": 8000},
        {"name": "offer", "wait_ms": 8000, "prompt": "We can carry on without it.", "routes": ["continue_without_code", "transfer"]},
        {"name": "close", "wait_ms": 1000, "prompt": "Goodbye.", "closes": True}]}
    report = check(data)
    assert report.flow is not None
    assert any(w.message.startswith("stage 'offer' lists unavailable route 'transfer', so it is not offered") for w in report.warnings)
    # the confirmation's own wording names ladder stages this ladder does not have: said so
    assert all("offer" in w.message or "never spoken" in w.message for w in report.warnings)


def test_invalid_json_gives_its_line_and_column():
    report = check_text('{\n  "name": "x",\n  "stages": [}\n', "f.json")
    assert [p.line() for p in report.errors] == ["f.json:3:14: error: (top level): invalid JSON: Expecting value"]


def test_positions_point_at_the_value():
    text = '{\n  "a": [1, {"b": "c"}]\n}'
    positions = value_positions(text)
    assert positions[("a",)] == (2, 8)
    assert positions[("a", 1, "b")] == (2, 18)


def test_the_published_schema_accepts_the_default_flow_and_rejects_a_typo():
    jsonschema = pytest.importorskip("jsonschema")
    schema = flow_schema()
    jsonschema.validate(DEFAULT, schema)
    bad = copy.deepcopy(DEFAULT)
    stage(bad, "ask_code")["colect"] = ["x"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


# -- timing (G1) ------------------------------------------------------------------


def test_timing_merge_takes_the_more_cautious_setting():
    merged = merge_timing([
        Timing(reprompt_after_ms=6000, filler_after_ms=2000, end_of_speech_ms=700, reprompt="first"),
        None,
        Timing(reprompt_after_ms=4000, filler_after_ms=3000, end_of_speech_ms=900, interruptible=False, reprompt="second", context_delivery="deferred"),
    ])
    assert merged == Timing(
        reprompt_after_ms=4000, filler_after_ms=2000, end_of_speech_ms=900,
        interruptible=False, reprompt="first", context_delivery="deferred",
    )
    assert merge_timing([None, None]) is None


def test_stage_timing_becomes_the_questions_ladder_policy():
    flow = compile_flow(FlowSpec.model_validate(DEFAULT))
    policy = flow.policy_for("ask_code", Timing(reprompt_after_ms=5000, reprompt="Still there?", filler_after_ms=900, interruptible=False))
    assert policy.stages[0].wait_ms == 5000
    assert policy.stages[1].prompt == "Still there?"
    assert policy.filler_after_ms == 900
    assert all(not s.interruptible for s in policy.stages)


# -- words (G2, V5) ------------------------------------------------------------------


def test_verbatim_similarity_is_word_level():
    ten = "one two three four five six seven eight nine ten"
    nine = "one two three four five six seven eight nine"
    assert verbatim_passes(ten.replace("five", "5ive"), ten)  # one wrong word in ten: 0.9
    assert not verbatim_passes(nine.replace("five", "5ive"), nine)  # in nine: 0.889
    assert word_similarity("Calls may be recorded.", "calls MAY be recorded") == 1.0
    assert word_similarity("", "") == 1.0


@pytest.mark.parametrize(
    "text, digits",
    [("4 8 2 1", "4821"), ("it's four eight two one", "4821"), ("double five three", "553"),
     ("oh seven", "07"), ("give me a moment", None)],
)
def test_digits_are_read_written_or_spoken(text, digits):
    assert parse_digits(text) == digits


def test_yes_no_and_numbers():
    assert parse_yes_no("yes that's right") is True
    assert parse_yes_no("no, it isn't") is False
    assert parse_yes_no("yes no maybe") is None
    assert parse_number("twenty three") == 23
    assert parse_number("two hundred and five") == 205
    assert parse_number("a few") is None


def test_lexical_matching_has_a_threshold_and_an_unclear_result():
    matcher = LexicalMatcher({"wait_request": ("give me a moment", "hold on")}, 0.55)
    assert matcher.match("give me a moment please")[0] == "wait_request"
    assert matcher.match("what's the weather")[0] is None


@pytest.mark.parametrize("said, value", [
    ("it's Biscuit the Second", "Biscuit the Second"),
    ("um, it is Rover.", "Rover"),
    ("her name is Bella", "Bella"),
    ("my dog's name is Max", "Max"),
    ("we call her Princess Sparkle", "Princess Sparkle"),
    ("okay so he's called Mister Whiskers", "Mister Whiskers"),
    ("Itsy Bitsy", "Itsy Bitsy"),  # a name that begins like a lead-in keeps it
    ("Isolde", "Isolde"),
    ("it's", "it's"),  # nothing after the lead-in: the turn as said
    ("  ", None),
])
def test_a_free_text_value_is_what_the_caller_named_not_how_they_began(said, value):
    """The agent reads a text value back ("I heard Biscuit the Second") and the flow
    stores it: the caller's "it's" and "um" are not part of the name."""
    assert parse_text(said) == value
