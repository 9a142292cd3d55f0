"""Flows Lull refuses at load: each is one problem line with its place, never a traceback.

A flow that cannot end (a cycle, no terminal stage, a stage with nothing after it), a
value no flow may hold (non-finite numbers, lone surrogates, strings for booleans), a
file that is not UTF-8 JSON text, and input that would crash the parser. Every loader
refuses them alike: `lull flow check` (exit 2), `lull rehearse`, `lull simulate`.
"""

import codecs
import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ladder.flow.spec import ToolSpec, flow_schema
from sessions.flowfiles import FlowFileError, check_data, check_file, check_text, library_flow_path, library_flows, load_flow

DEFAULT_TEXT = library_flow_path("reference_code").read_text(encoding="utf-8")
DEFAULT = json.loads(DEFAULT_TEXT)
LULL = shutil.which("lull", path=str(Path(sys.executable).parent)) or shutil.which("lull")


def lull(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    assert LULL, "the `lull` command is not installed (pip install -e .)"
    return subprocess.run([LULL, *args], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, cwd=cwd)


def mutated(mutate) -> dict:
    data = copy.deepcopy(DEFAULT)
    mutate(data)
    return data


def stage(data: dict, sid: str) -> dict:
    return next(s for s in data["stages"] if s["id"] == sid)


def default_text_with(old: str, new: str) -> str:
    text = json.dumps(DEFAULT, indent=2)
    assert old in text
    return text.replace(old, new, 1)


def position_of(text: str, needle: str) -> tuple[int, int]:
    offset = text.index(needle)
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


def only_error(report) -> str:
    assert report.flow is None
    assert len(report.problems) == 1, [p.line() for p in report.problems]
    [problem] = report.problems
    assert problem.severity == "error"
    return problem.line()


# -- a flow that cannot end is refused (item 2) ------------------------------------------


def test_a_cycle_of_next_edges_is_refused_where_it_is_written():
    data = mutated(lambda d: stage(d, "ask_code").update(next="greet"))
    text = json.dumps(data, indent=2)
    report = check_text(text, "flow.json")
    assert report.flow is None
    [cycle] = [p for p in report.errors if "cycle" in p.message]
    line, col = position_of(text, '"disclosure"')  # the value of greet's "next"
    assert cycle.line() == (
        f"flow.json:{line}:{col}: error: stages[0].next: stages 'greet' -> 'disclosure' -> "
        "'ask_code' -> 'greet' form a cycle (3 stages): each waits for the one before it to complete, "
        "so none can start and the call cannot end"
    )


def test_a_cycle_through_after_is_refused():
    data = mutated(lambda d: stage(d, "greet").update(after=["confirm_code"]))
    messages = [p.line() for p in check_data(data, "flow.json").errors]
    assert any(
        "stages[0].next: stages 'greet' -> 'disclosure' -> 'ask_code' -> 'confirm_code' -> 'greet' form a cycle (4 stages)" in m
        for m in messages
    ), messages


def test_a_flow_without_a_terminal_stage_is_refused():
    def no_terminal(d):
        for s in d["stages"]:
            s.pop("terminal", None)

    line = only_error(check_text(json.dumps(mutated(no_terminal), indent=2), "flow.json"))
    assert line.endswith(
        'error: stages: the flow has no terminal stage, so a call can never end; mark the stage that ends the call "terminal": true'
    )


def test_a_stage_with_nothing_after_it_is_refused():
    data = mutated(lambda d: stage(d, "confirm_code").pop("next"))
    errors = [p.line() for p in check_data(data, "flow.json").errors]
    assert any(
        "stages[3]: stage 'confirm_code' is not terminal and nothing comes after it, so a call that completes it waits forever" in e
        for e in errors
    ), errors


def test_an_escalation_does_not_count_as_what_comes_after_a_stage():
    # answering completes the stage; only giving up takes the escalation
    data = mutated(lambda d: stage(d, "lookup").pop("next"))
    errors = [p.message for p in check_data(data, "flow.json").errors]
    assert any("stage 'lookup' is not terminal and nothing comes after it" in e for e in errors), errors


def test_every_flow_shipped_with_lull_loads_clean():
    for path in library_flows():
        report = check_file(path)
        assert report.flow is not None and report.errors == [], [p.line() for p in report.problems]


# -- the tool timeout (item 3) ---------------------------------------------------------------


def test_a_tool_waits_ten_seconds_by_default_and_its_timeout_is_documented():
    assert ToolSpec(name="t").timeout_ms == 10_000
    field = flow_schema()["$defs"]["ToolSpec"]["properties"]["timeout_ms"]
    assert field["default"] == 10_000 and field["exclusiveMinimum"] == 0
    assert "unknown" in field["description"]
    flow = check_data(mutated(lambda d: d["tools"][0].update(timeout_ms=2500)), "flow.json").flow
    assert flow is not None and flow.tools["lookup_reference"].timeout_ms == 2500


@pytest.mark.parametrize(
    "literal, says",
    [
        ("0", "greater than 0"),
        ("-5", "greater than 0"),
        ('"10000"', 'expected a number, got the string "10000"'),
        ("Infinity", "expected a finite number, got Infinity"),
        ("NaN", "expected a finite number, got NaN"),
        ("true", "expected a number, got true"),
    ],
)
def test_a_tool_timeout_must_be_a_positive_finite_number(literal, says):
    text = default_text_with('"latency_ms": 2500', f'"latency_ms": 2500, "timeout_ms": {literal}')
    line = only_error(check_text(text, "flow.json"))
    row, col = position_of(text, f'"timeout_ms": {literal}')
    col += len('"timeout_ms": ')  # the value's own position
    assert line.startswith(f"flow.json:{row}:{col}: error: tools[0].timeout_ms: ")
    assert says in line


# -- values and files no flow may be (item 4) ----------------------------------------------


@pytest.mark.parametrize(
    "mutate, where, says",
    [
        (lambda d: d["policies"][0].update(keys=["refrence_code"]), "policies[0].keys[0]",
         "redact key 'refrence_code' names no slot; did you mean 'reference_code'?"),
        (lambda d: d["slots"]["reference_code"].update(min_length=9, max_length=4), "slots.reference_code.max_length",
         "max_length 4 is below min_length 9, so no answer could fit both"),
        (lambda d: d.update(schema=2), "schema", "unsupported flow schema version 2: this Lull reads schema 1"),
        (lambda d: stage(d, "close_found").update(terminal="yes"), "stages[5].terminal",
         'expected true or false, got the string "yes"'),
        (lambda d: stage(d, "ask_code")["timing"].update(interruptible=1), "stages[2].timing.interruptible",
         "expected true or false, got the integer 1"),
        (lambda d: stage(d, "ask_code")["repair"].update(escalate_after=6.0), "stages[2].repair.escalate_after",
         "expected an integer, got the number 6.0"),
        (lambda d: d["routes"][2].update(available="no"), "routes[2].available",
         'expected true or false, got the string "no"'),
        (lambda d: d.update(ladder={"stages": [{"name": "wait", "wait_ms": "8000"}, {"name": "close", "wait_ms": 100, "closes": True}]}),
         "ladder.stages[0].wait_ms", "Input should be a valid number"),
    ],
)
def test_a_value_of_the_wrong_kind_is_one_line_at_its_place(mutate, where, says):
    text = json.dumps(mutated(mutate), indent=2)
    line = only_error(check_text(text, "flow.json"))
    assert f": error: {where}: {says}" in line, line
    row = int(line.split(":")[1])
    assert row > 1


@pytest.mark.parametrize(
    "old, new, value, where, says",
    [
        ('"latency_ms": 2500', '"latency_ms": Infinity', "Infinity", "tools[0].latency_ms", "expected a finite number, got Infinity"),
        ('"latency_ms": 2500', '"latency_ms": -Infinity', "-Infinity", "tools[0].latency_ms", "expected a finite number, got -Infinity"),
        ('"latency_ms": 2500', '"latency_ms": NaN', "NaN", "tools[0].latency_ms", "expected a finite number, got NaN"),
        ('"latency_ms": 2500', '"latency_ms": 1e999', "1e999", "tools[0].latency_ms", "expected a finite number, got Infinity"),
        ('"status": "open"', '"status": NaN', "NaN", "tools[0].result.status", "expected a finite number, got NaN"),
        ('"ladder": {\n    "stages"', '"ladder": {"episode_ms": Infinity,\n    "stages"', "Infinity", "ladder.episode_ms", "expected a finite number, got Infinity"),
        ('"Hello, this is the reference desk."', '"Hello \\ud800"', '"Hello', "stages[0].say",
         'the string "Hello \\ud800" holds a lone surrogate'),
        ('"status": "open"', '"\\udfff": "open"', '"open"', "tools[0].result.\udfff", 'key "\\udfff" holds a lone surrogate'),
    ],
)
def test_a_value_no_flow_may_hold_is_refused_wherever_it_is(old, new, value, where, says):
    text = default_text_with(old, new)
    line = only_error(check_text(text, "flow.json"))
    row, col = position_of(text, new)
    col += new.index(value)
    assert line.startswith(f"flow.json:{row}:{col}: error: {where}: {says}"), line


def test_a_valid_surrogate_pair_is_text():
    text = default_text_with('"Hello, this is the reference desk."', '"Hello \\ud83d\\ude00"')
    assert check_text(text, "flow.json").flow is not None


def test_an_inline_flow_is_checked_like_a_file():
    with pytest.raises(FlowFileError, match=r"tools\[0\]\.latency_ms: expected a finite number, got Infinity"):
        load_flow(mutated(lambda d: d["tools"][0].update(latency_ms=float("inf"))))
    with pytest.raises(FlowFileError, match=r"stages\[0\]\.say: the string .* holds a lone surrogate"):
        load_flow(mutated(lambda d: stage(d, "greet").update(say="x\udc80")))
    with pytest.raises(FlowFileError, match=r"tools\[0\]\.result\.n: integer of about 5000 digits is too large"):
        load_flow(mutated(lambda d: d["tools"][0]["result"].update(n=10**4999)))


def test_a_5000_digit_integer_is_refused_where_it_is_written():
    text = default_text_with('"latency_ms": 2500', '"latency_ms": ' + "7" * 5000)
    line = only_error(check_text(text, "flow.json"))
    row, col = position_of(text, "7777")
    assert line == (
        f"flow.json:{row}:{col}: error: (top level): integer of 5000 digits is too large: a flow's integers "
        "fit in 64 bits (at most 19 digits); write a long digit string as a JSON string"
    )


def test_an_integer_beyond_64_bits_is_refused():
    text = default_text_with('"latency_ms": 2500', '"latency_ms": 2500, "result": {"n": 99999999999999999999}')
    line = only_error(check_text(text, "flow.json"))
    assert "integer of 20 digits is too large" in line or "integer 99999999999999999999 is too large" in line, line


@pytest.mark.parametrize("opening", ["[", '{"a": '])
def test_deep_nesting_is_refused_where_it_gets_too_deep(opening):
    text = opening * 100_000 + "1" + ("]" if opening == "[" else "}") * 100_000
    line = only_error(check_text(text, "deep.json"))
    assert line == f"deep.json:1:{len(opening) * 64 + 1}: error: (top level): nested more than 64 levels deep; a flow never needs that many"


def test_deep_nesting_inside_a_valid_document_is_refused():
    text = default_text_with('"status": "open"', '"status": ' + "[" * 70 + "]" * 70)
    line = only_error(check_text(text, "flow.json"))
    assert "nested more than 64 levels deep" in line


def test_brackets_inside_strings_are_not_nesting():
    text = default_text_with('"Hello, this is the reference desk."', json.dumps("[" * 200 + " 9" * 300))  # 800 characters: a prompt holds 1,000
    assert check_text(text, "flow.json").flow is not None


BAD_FILES = {
    "latin1.json": (DEFAULT_TEXT.replace("Hello", "H\u00e9llo").encode("latin-1"),
                    "not UTF-8 text: byte 0xe9 cannot be decoded; save the file as UTF-8"),
    "utf16_bom.json": (DEFAULT_TEXT.encode("utf-16"),
                       "the file is UTF-16 text (it starts with a byte order mark); save it as UTF-8"),
    "utf16_le.json": (DEFAULT_TEXT.encode("utf-16-le"),
                      "the file looks like UTF-16 (little-endian) text without a byte order mark; save it as UTF-8"),
    "utf16_be.json": (DEFAULT_TEXT.encode("utf-16-be"),
                      "the file looks like UTF-16 (big-endian) text without a byte order mark; save it as UTF-8"),
    "utf32.json": (DEFAULT_TEXT.encode("utf-32"),
                   "the file is UTF-32 text (it starts with a byte order mark); save it as UTF-8"),
    "utf8_bom.json": (codecs.BOM_UTF8 + DEFAULT_TEXT.encode(),
                      "the file starts with a UTF-8 byte order mark; save it as UTF-8 without one"),
    "binary.json": (bytes(range(256)) * 8, "a binary file, not JSON text (it contains NUL bytes)"),
    "high_bytes.bin": (b"\x89\xff\xfe\x80" * 100, "not UTF-8 text: byte 0x89 cannot be decoded"),
    "encoded_surrogate.json": (DEFAULT_TEXT.replace("Hello", "\x00").encode().replace(b"\x00", b"\xed\xa0\x80"),
                               "not UTF-8 text: byte 0xed cannot be decoded"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_a_file_that_is_not_utf8_json_text_is_one_line(tmp_path, name):
    raw, says = BAD_FILES[name]
    path = tmp_path / name
    path.write_bytes(raw)
    line = only_error(check_file(path))
    assert line.startswith(f"{path}:") and says in line, line


def test_an_undecodable_byte_is_located_by_line_and_column(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes(BAD_FILES["latin1.json"][0])
    row, col = position_of(DEFAULT_TEXT, "Hello")
    assert only_error(check_file(path)).startswith(f"{path}:{row}:{col + 1}: error: (top level): not UTF-8 text")


def test_a_folder_is_not_a_flow(tmp_path):
    assert "cannot read: Is a directory" in only_error(check_file(tmp_path))


# -- every loader refuses them in one line, with no traceback -------------------------------


def refused_files(folder: Path) -> list[Path]:
    texts = {
        "redact_typo.json": json.dumps(mutated(lambda d: d["policies"][0].update(keys=["refrence_code"]))),
        "min_above_max.json": json.dumps(mutated(lambda d: d["slots"]["reference_code"].update(min_length=9, max_length=4))),
        "schema_2.json": json.dumps(mutated(lambda d: d.update(schema=2))),
        "infinity.json": default_text_with('"latency_ms": 2500', '"latency_ms": Infinity'),
        "nan.json": default_text_with('"latency_ms": 2500', '"latency_ms": NaN'),
        "terminal_yes.json": json.dumps(mutated(lambda d: stage(d, "close_found").update(terminal="yes"))),
        "surrogate.json": default_text_with('"Hello, this is the reference desk."', '"\\ud800"'),
        "deep.json": "[" * 100_000 + "]" * 100_000,
        "big_integer.json": default_text_with('"latency_ms": 2500', '"latency_ms": ' + "9" * 5000),
        "cycle.json": json.dumps(mutated(lambda d: stage(d, "ask_code").update(next="greet"))),
    }
    paths = []
    for name, text in texts.items():
        paths.append(folder / name)
        paths[-1].write_text(text, encoding="utf-8")
    for name, (raw, _) in BAD_FILES.items():
        paths.append(folder / name)
        paths[-1].write_bytes(raw)
    return paths


def test_flow_check_refuses_each_bad_flow_in_one_line_and_exits_two(tmp_path):
    paths = refused_files(tmp_path)
    result = lull("flow", "check", *map(str, paths))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    lines = result.stderr.splitlines()
    assert [line.split(":")[0] for line in lines] == [str(p) for p in paths], result.stderr
    assert all(": error: " in line for line in lines)


@pytest.mark.parametrize("name", ["surrogate.json", "big_integer.json", "utf16_le.json", "terminal_yes.json"])
def test_rehearse_refuses_a_bad_flow_in_one_line(tmp_path, name):
    [path] = [p for p in refused_files(tmp_path) if p.name == name]
    result = lull("rehearse", str(path), "--headless", "--backend", "text")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {path}:") and line.count("error") == 1, line  # "error" once, not twice


def test_simulate_refuses_a_scenario_whose_flow_is_bad_in_one_line(tmp_path):
    [flow] = [p for p in refused_files(tmp_path) if p.name == "deep.json"]
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"schema": 1, "name": "bad_flow", "title": "t", "flow": str(flow), "steps": [{"say": "hi"}]}))
    result = lull("simulate", str(scenario))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert "nested more than 64 levels deep" in line


# -- the user's text is never console markup (item 5) ----------------------------------------


def test_flow_check_prints_a_file_name_that_looks_like_markup_as_written(tmp_path):
    (tmp_path / "[").mkdir()
    (tmp_path / "[" / "]x.json").write_text(DEFAULT_TEXT, encoding="utf-8")
    (tmp_path / "[bold]broken.json").write_text(json.dumps({"name": "x", "stages": [{"id": "[/]", "say": "[red]hi"}]}))
    result = lull("flow", "check", "[/]x.json", "[bold]broken.json", "[/]missing.json", cwd=tmp_path)
    assert "Traceback" not in result.stderr and "MarkupError" not in result.stderr, result.stderr
    assert result.returncode == 2
    assert "[/]x.json: ok: 8 stages" in result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 2, result.stderr
    assert lines[0].startswith("[bold]broken.json:1:") and "stages[0].id" in lines[0]
    # a problem with the file itself has no position in it
    assert lines[1] == "[/]missing.json: error: no flow of that name in the library and no such file (shipped flows: reference_code)"


def test_simulate_prints_failures_that_look_like_markup_as_written(tmp_path):
    scenario = tmp_path / "markup.json"
    scenario.write_text(json.dumps({
        "schema": 1, "name": "markup_in_expectation", "title": "t", "flow": "reference_code",
        "steps": [{"expect": {"played": "[/][bold]never said"}}],
    }))
    result = lull("simulate", str(scenario))
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1
    assert "[/][bold]never said" in result.stdout


def test_simulate_names_a_missing_scenario_that_looks_like_markup_as_written(tmp_path):
    result = lull("simulate", "[/]nowhere.json", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: [/]nowhere.json: cannot read")
