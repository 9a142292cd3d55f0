"""Answers that are really answers (issue 10, item 4): spoken digits as whisper writes
them, and a sentence that is not about the code fills nothing.

The parser and the journal's digit mask read the same words the same way, so every
call here is also recorded redacted and replayed: it must replay CLEAN.
"""

from __future__ import annotations

import json

import pytest

from ladder.flow.understanding.text import digit_answer_evidence, mask_digits, parse_digits, restarts
from sessions.replay import replay
from console_fixtures import journal_text_without_clocks
from sessions.scenarios import load_scenario, run_scenario


@pytest.mark.parametrize(
    "text, digits",
    [
        ("33 for 692", "334692"),  # whisper's "for" between digits is a four
        ("to 9", "29"),  # `lull say "two nine"` as tiny.en transcribes it
        ("it's for 8 2 1", "4821"),
        ("5 ate 3 too", "5832"),
        ("won 2 3", "123"),
        ("oh seven", "07"),
        ("double oh 7", "007"),
        ("double five", "55"),
        ("triple zero 4", "0004"),
        ("Or 8 2 1.", "4821"),  # "four" clipped: talking over a loud laptop speaker (issue 10 laptop trial)
        ("um, or 8 2 1", "4821"),
        ("29 340", "29340"),
        ("293.40", "29340"),
        ("29,340", "29340"),
        # ordinary words stay words
        ("Oh, it's 4 8 2 1", "4821"),
        ("go to 5", "5"),
        ("for 3 days", "3"),
        ("I won 5 dollars", "5"),
        ("I want to go", None),
        ("2 or 3", "23"),
        ("or 3 days", "3"),
        ("or not", None),
    ],
)
def test_digits_as_whisper_writes_them(text, digits):
    assert parse_digits(text) == digits


@pytest.mark.parametrize(
    "text, answer",
    [
        ("4 8", True),
        ("to 9", True),
        ("um, the code is 4 8 2 1", True),
        ("yeah so the reference code I have here is 4821", True),
        ("double five", True),
        ("go forward ten meters", False),
        ("go forward 10 meters", False),
        ("give me 2 to 3 minutes", False),
        ("call me back at 5", False),
        ("I have it now", False),
    ],
)
def test_an_answer_needs_evidence_it_is_one(text, answer):
    assert digit_answer_evidence(text) is answer


def test_the_flows_answer_phrases_are_evidence():
    assert not digit_answer_evidence("my account ends with 48")
    assert digit_answer_evidence("my account ends with 48", answer_phrase=True)
    assert not digit_answer_evidence("no digits here", answer_phrase=True)


def test_corrections_and_restarts_are_recognised():
    assert restarts("no, sorry, 4 8 2 2")
    assert restarts("let me start again")
    assert restarts("I mean 5 5")
    assert not restarts("4 8")


def test_homophones_are_masked_exactly_as_they_are_read():
    cipher: dict[str, str] = {}
    assert mask_digits("33 for 692", cipher) == "00 1 234"
    assert mask_digits("go to 5 for now", cipher) == "go to 5 1 now"  # 5 is new: it takes "5"
    assert mask_digits("for 3 days", cipher) == "for 0 days"


# -- whole calls through the default flow ----------------------------------------------


def _call(tmp_path, name: str, steps: list[dict]):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"schema": 1, "name": name, "title": name, "flow": "reference_code", "steps": steps}))
    outcome = run_scenario(load_scenario(path), path, record_to=tmp_path / name)
    assert outcome.passed, "\n".join(outcome.failures)
    result = replay(tmp_path / name)
    assert result.verdict == "CLEAN", result.describe()
    return journal_text_without_clocks(tmp_path / name / "journal.jsonl")  # a timestamp's digits are no leak


def test_a_sentence_with_a_number_in_it_fills_nothing(tmp_path):
    journal = _call(tmp_path, "unrelated", [
        {"expect": {"active_stage": "ask_code"}},
        {"say": "go forward 10 meters"},
        {"expect": {"slots": {"reference_code": None}, "active_stage": "ask_code",
                    "journal_contains": [{"kind": "digits_not_an_answer"}]}},
        {"say": "29 340"},
        # the real code is not glued behind the unrelated number (1029340)
        {"expect": {"slots": {"reference_code": "29340"}, "active_stage": "confirm_code"}},
    ])
    assert "29340" not in journal and "1029340" not in journal


def test_a_code_said_in_two_parts_is_one_answer(tmp_path):
    _call(tmp_path, "two_parts", [
        {"expect": {"active_stage": "ask_code"}},
        {"say": "to 9"},
        {"expect": {"slots": {"reference_code": None}, "active_stage": "ask_code"}},
        {"say": "3 for 0"},
        {"expect": {"slots": {"reference_code": "29340"}, "active_stage": "confirm_code"}},
    ])


def test_a_restart_replaces_the_partial_answer(tmp_path):
    _call(tmp_path, "restart", [
        {"expect": {"active_stage": "ask_code"}},
        {"say": "4 8"},
        {"say": "no sorry, 5 5"},
        {"say": "6 6"},
        {"expect": {"slots": {"reference_code": "5566"}, "journal_contains": [{"kind": "partial_replaced", "reason": "restart"}]}},
    ])


def test_the_whole_code_again_replaces_the_partial_answer(tmp_path):
    _call(tmp_path, "whole_again", [
        {"expect": {"active_stage": "ask_code"}},
        {"say": "4 8"},
        {"say": "it's 4 8 2 1"},
        {"expect": {"slots": {"reference_code": "4821"}, "journal_contains": [{"kind": "partial_replaced", "reason": "whole_value"}]}},
    ])


def test_digits_that_would_overrun_the_code_start_it_again():
    # a four-digit code: "one nine three five" misheard as "193" leaves a partial; the
    # caller, asked again, starts over ("two zero", a pause, "eight six"). Glued to the
    # partial "2 0" would make five digits, more than any code: they begin it again, so
    # the end of turn holds the turn open at the pause and the whole code fills the slot
    from ladder import CallerUtterance, PlaybackCompleted, RequestPrompt, StartCall, Trace
    from ladder.flow.runtime import FlowRuntime
    from ladder.flow.understanding.text import answer_progress, replaced_partial
    from sessions.flowfiles import check_data

    assert replaced_partial("2 0", "20", "193", 4, 4) == "overrun"
    assert replaced_partial("5", "5", "193", 4, 4) is None  # the rest of it
    assert replaced_partial("2 0", "20", "193", 4, 8) is None  # 19320 may be a code
    assert answer_progress("digits", "2 0", min_length=4, max_length=4, partial="193") == "partial"
    assert answer_progress("digits", "5", min_length=4, max_length=4, partial="193") == "complete"

    report = check_data({
        "name": "meter", "stages": [
            {"id": "ask", "say": "What is the code?", "collect": ["code"]},
            {"id": "done", "after": ["ask"], "say": "Thank you.", "terminal": True}],
        "slots": {"code": {"type": "digits", "min_length": 4, "max_length": 4}},
    }, "test flow")
    assert report.flow is not None, report.problems
    runtime = FlowRuntime(report.flow)
    now, traces = 0.0, []

    def play(effects):
        nonlocal now
        for effect in effects:
            if isinstance(effect, Trace):
                traces.append(effect)
            if isinstance(effect, RequestPrompt):
                now += 500
                play(runtime.handle(PlaybackCompleted(effect.token), now))

    play(runtime.handle(StartCall(), now))
    for seq, words in enumerate(["193.", "2 0", "8 6"], start=1):
        now += 1000
        play(runtime.handle(CallerUtterance(f"t{seq}", seq, words), now))
        if seq == 2:
            assert runtime.partial == {"code": "20"}
    assert runtime.state["code"] == "2086"
    assert [t.reason for t in traces if t.kind == "partial_replaced"] == ["overrun"]
