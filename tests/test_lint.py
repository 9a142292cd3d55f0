"""The prompt lint (ladder/flow/lint.py): one set of rules for flow check, compile and the editor."""

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ladder.flow.lint import claims_action, claims_receipt, denies_receipt
from ladder.flow.wording import lint_wording
from sessions.flowfiles import check_data, check_file, library_flow_path, library_flows, resolve_flow

SCENARIOS = Path(__file__).parent / "scenarios"
DEFAULT = json.loads(library_flow_path("reference_code").read_text())
LULL = shutil.which("lull", path=str(Path(sys.executable).parent)) or shutil.which("lull")


def stage(data: dict, sid: str) -> dict:
    return next(s for s in data["stages"] if s["id"] == sid)


def problems(data: dict) -> list[str]:
    report = check_data(data, "flow.json", json.dumps(data, indent=2))
    return [p.line() for p in report.problems if p.severity == "error"]


def mutated(change) -> dict:
    data = copy.deepcopy(DEFAULT)
    change(data)
    return data


def ladder(*stages) -> dict:
    return {"stages": [{"name": "quiet_wait", "wait_ms": 8000}, *stages, {"name": "safe_close", "wait_ms": 1000, "prompt": "Goodbye.", "closes": True}]}


def test_every_shipped_flow_and_every_scenario_flow_passes_the_lint():
    for path in library_flows():
        report = check_file(path)
        assert report.flow is not None and not report.errors, [p.line() for p in report.problems]
    for path in sorted(SCENARIOS.glob("*.json")):
        flow = json.loads(path.read_text())["flow"]
        if isinstance(flow, str):
            report = check_file(library_flow_path(flow) or resolve_flow(flow, path))
        else:
            report = check_data(flow, str(path))
        assert report.flow is not None, [p.line() for p in report.problems]


@pytest.mark.parametrize(
    "change, where, says",
    [
        # a placeholder typo used to pass and be read aloud, braces and all
        (lambda d: stage(d, "confirm_code").update(say="I heard {refernce_code}. Is that right?"),
         "stages[3].say", "placeholder {refernce_code} names no slot; did you mean {reference_code}?"),
        (lambda d: stage(d, "ask_code").update(say="Is {code_confirmed} right? What is your code?"),
         "stages[2].say", "placeholder {code_confirmed} names a slot that no stage before this one collects"),
        (lambda d: stage(d, "greet").update(say="   "), "stages[0].say", "is empty"),
        (lambda d: d.update(ladder={"acknowledgement": ""}), "ladder.acknowledgement", "is empty"),
        (lambda d: d.update(ladder=ladder({"name": "check", "wait_ms": 8000, "prompt": ""})), "ladder.stages[1].prompt", "is empty"),
        (lambda d: d.update(ladder=ladder({"name": "offer", "wait_ms": 8000, "prompt": "Or I can transfer you to a person."})),
         "ladder.stages[1].prompt", "promises 'transfer to a person' (route 'transfer'), which is not available"),
        (lambda d: stage(d, "greet").update(say="Hello. Someone will be with you shortly."),
         "stages[0].say", "promises 'transfer to a person' (route 'transfer'), which is not available"),
        # a route the stage does not offer
        (lambda d: d.update(ladder=ladder({"name": "offer", "wait_ms": 8000, "prompt": "We can carry on without it."})),
         "ladder.stages[1].prompt", "which it does not offer; add 'continue_without_code' to its routes"),
        (lambda d: d.update(ladder=ladder({"name": "offer", "wait_ms": 8000, "prompt": "If you like, {routes}."})),
         "ladder.stages[1].prompt", "says {routes} but offers no routes"),
        (lambda d: (d.update(ladder=ladder({"name": "offer", "wait_ms": 8000, "prompt": "If you like, {routes}.", "routes": ["repeat"]})),
                    d["routes"][0].pop("offer")),
         "ladder.stages[1].prompt", "route 'repeat' has no offer phrase"),
        # per-question ladders: the confirmation may not reuse the code question's ladder
        (lambda d: stage(d, "confirm_code").pop("ladder"),
         "stages[3].collect", "its silence ladder is the flow's, whose safe_close wording talks about reference code"),
        # a close that the state contradicts: the code was collected before the confirmation
        (lambda d: stage(d, "confirm_code")["ladder"]["prompts"].update(
            safe_close="I haven't received the reference code, so nothing has been changed."),
         "stages[3].ladder.prompts.safe_close", "but reference code was collected before this stage"),
        (lambda d: stage(d, "confirm_code")["ladder"].update(close_deadline="Time is up. We didn't get your reference code."),
         "stages[3].ladder.close_deadline", "but reference code was collected before this stage"),
        # a close that claims what has not happened when it plays
        (lambda d: stage(d, "confirm_code")["ladder"]["prompts"].update(safe_close="Your code is confirmed. Goodbye."),
         "stages[3].ladder.prompts.safe_close", "but code confirmed has not been collected when this close plays"),
        (lambda d: stage(d, "confirm_code")["ladder"]["prompts"].update(safe_close="I've looked up your reference. Goodbye."),
         "stages[3].ladder.prompts.safe_close", "but no tool has run before this stage"),
        (lambda d: stage(d, "ask_code").update(ladder={"prompts": {"safe_close": "I have your reference code, thank you. Goodbye."}}),
         "stages[2].ladder.prompts.safe_close", "but reference code has not been collected when this close plays"),
    ],
)
def test_the_lint_refuses_wording_with_its_path(change, where, says):
    errors = problems(mutated(change))
    assert any(f": error: {where}: " in e and says in e for e in errors), errors


def test_a_closing_claim_about_the_pending_question_itself_is_true():
    # "I haven't received the reference code" while the code question is pending is true
    assert problems(DEFAULT) == []
    assert denies_receipt("I haven't received the reference code.")
    assert denies_receipt("The reference code hasn't been received.")
    assert not denies_receipt("I heard a code, but it wasn't confirmed.")
    # the confirmation's own close says the code was heard (true) and nothing looked up
    assert not claims_receipt("I heard a code, but it wasn't confirmed, so nothing has been looked up or changed.")
    assert not claims_action("Nothing has been looked up or changed.")
    assert claims_receipt("Your code is confirmed.") and claims_action("I've checked your booking.")


def flow_check(tmp_path: Path, data: dict) -> subprocess.CompletedProcess:
    path = tmp_path / "flow.json"
    path.write_text(json.dumps(data, indent=2))
    assert LULL, "the `lull` command is not installed (pip install -e .)"
    return subprocess.run([LULL, "flow", "check", str(path)], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "change, says",
    [
        (lambda d: stage(d, "confirm_code").update(say="I heard {refernce_code}. Is that right?"), "names no slot"),
        (lambda d: d.update(ladder=ladder({"name": "offer", "wait_ms": 8000, "prompt": "I can transfer you to a person."})), "not available"),
        (lambda d: stage(d, "greet").update(say=""), "is empty"),
    ],
)
def test_flow_check_refuses_them_with_file_line_column_and_exit_2(tmp_path, change, says):
    result = flow_check(tmp_path, mutated(change))
    assert result.returncode == 2, result.stdout + result.stderr
    line = next(x for x in result.stderr.splitlines() if says in x)
    source, row, col = line.split(":")[:3]
    assert source.endswith("flow.json") and int(row) > 1 and int(col) > 1


def test_flow_check_passes_the_shipped_flow(tmp_path):
    result = subprocess.run([LULL, "flow", "check", "reference_code"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "0 warning(s)" in result.stdout, result.stdout + result.stderr


def compiled():
    return check_data(DEFAULT, "default").flow


def test_the_editor_lint_says_what_is_wrong_with_one_text():
    flow = compiled()
    assert lint_wording(("stages", 3, "say"), "I heard {refernce_code}. Is that right?", flow) == [
        "stage 'confirm_code': placeholder {refernce_code} names no slot; did you mean {reference_code}?"
    ]
    assert lint_wording(("ladder", "acknowledgement"), "  ", flow) == ["is empty"]
    said = lint_wording(("ladder", "stages", 2, "prompt"), "I can transfer you to a person now.", flow)
    assert any("promises 'transfer to a person'" in p for p in said)
    assert lint_wording(("stages", 3, "say"), "I heard {reference_code}. Is that right?", flow) == []
    said = lint_wording(("ladder", "stages", 1, "prompt"), "You didn't answer. Take your time.", flow, wait_ms=10000)
    assert any("blames the caller" in p for p in said)
    assert lint_wording(("ladder", "stages", 1, "prompt"), "Take your time.", flow, wait_ms=1000, measured_ms=2500) == [
        "lasts 2.5s, longer than its stage's 1s wait"
    ]


def test_the_console_lint_delegates_to_the_flow_lint():
    from console.prompts import lint, prompt_items

    flow = compiled()
    items = {i.key: i for i in prompt_items(flow)}
    assert lint(items["stage:confirm_code"], "I heard {refernce_code}. Is that right?", flow) == [
        "stage 'confirm_code': placeholder {refernce_code} names no slot; did you mean {reference_code}?"
    ]
    assert lint(items["ladder:acknowledgement"], "", flow) == ["is empty"]
    assert lint(items["ladder:gentle_check"], "Take your time.", flow) == []


def test_an_empty_or_misspelt_edit_is_refused_by_the_running_call():
    from ladder.events import EditWording, StartCall
    from ladder.flow.runtime import FlowRuntime

    runtime = FlowRuntime(compiled())
    runtime.handle(StartCall(), 0)
    for path, text in ((("ladder", "acknowledgement"), ""), (("stages", 3, "say"), "I heard {refernce_code}.")):
        effects = runtime.handle(EditWording(path, text), 10)
        assert [e.kind for e in effects if getattr(e, "kind", None) in ("edit_rejected", "wording_edited")] == ["edit_rejected"]
    assert runtime.flow.ladder.acknowledgement == "Sure, take your time."
