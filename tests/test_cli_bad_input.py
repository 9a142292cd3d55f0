"""Bad input found by running `lull` as a careless user would: each gets one clear line
(what, where, what was expected), a non-zero exit, and nothing written."""

import json
import os
import subprocess

import numpy as np
import pytest
import soundfile
from test_cli_errors import LULL, lull, one_error_line

from ladder.policy import MAX_PROMPT_CHARS
from sessions.flowfiles import check_text, library_flow_path

DEFAULT = library_flow_path("reference_code").read_text(encoding="utf-8")


@pytest.mark.parametrize("text", ["", "   "], ids=["empty", "blank"])
def test_say_refuses_empty_text_before_the_voice_or_the_device(tmp_path, text):
    wav = tmp_path / "x.wav"
    one_error_line(lull("say", text, "--out", str(wav)), "TEXT is empty")
    assert not wav.exists()
    # without --out it would play: still the text is what is wrong, not the output device
    one_error_line(lull("say", text), "TEXT is empty")


def test_say_refuses_text_longer_than_a_prompt_at_once(tmp_path):
    wav = tmp_path / "x.wav"
    line = one_error_line(lull("say", "word " * 10_000, "--out", str(wav)), "50,000 characters", f"at most {MAX_PROMPT_CHARS:,}")
    assert "split it" in line and not wav.exists()


def test_say_refuses_text_with_nothing_to_say(tmp_path):
    wav = tmp_path / "x.wav"
    one_error_line(lull("say", "...", "--out", str(wav)), "nothing the voice can say")
    assert not wav.exists()


@pytest.mark.parametrize("turns", ["-3", "0", "9"])
def test_bench_turn_refuses_a_turn_count_out_of_range(turns):
    result = lull("bench", "turn", "--turns", turns)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "Invalid value for '--turns'" in result.stderr, result.stderr
    assert ("greater than or equal to 1" if int(turns) < 1 else "less than or equal to 8") in result.stderr


def test_bench_turn_refuses_an_unknown_caller_before_loading_a_model():
    one_error_line(lull("bench", "turn", "--caller", "foo"), "--caller foo", "expected synthetic or human")


def test_flow_check_of_an_empty_name_or_a_folder_says_so_without_a_position(tmp_path):
    line = lull("flow", "check", "", cwd=tmp_path).stderr.strip()
    assert line.startswith('"": error: the flow\'s name is empty') and "reference_code" in line, line
    (tmp_path / "flows").mkdir()
    result = lull("flow", "check", "flows", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == "flows: error: is a folder; expected a flow file (JSON)"


def test_a_missing_flow_says_error_once_and_names_the_shipped_flows(tmp_path):
    line = one_error_line(lull("rehearse", "no_such_flow", "--headless", "--backend", "text", cwd=tmp_path))
    assert line == "error: no_such_flow: no flow of that name in the library and no such file (shipped flows: reference_code)"


def test_a_flow_with_a_key_written_twice_is_refused_at_the_second_one(tmp_path):
    data = json.loads(DEFAULT)
    text = json.dumps(data, indent=2)
    # the first stage's "say" written twice: JSON keeps the last, the designer loses the first
    first_say = text.index('"say"')
    line_end = text.index("\n", first_say)
    doubled = text[: line_end + 1] + '      "say": "Hi there.",\n' + text[line_end + 1 :]
    report = check_text(doubled, "flow.json")
    assert report.flow is None
    [problem] = report.problems
    assert problem.path == ("stages", 0, "say") and "written twice" in problem.message
    assert problem.line_no == doubled[: line_end + 1].count("\n") + 1
    (tmp_path / "twice.json").write_text(doubled)
    result = lull("flow", "check", "twice.json", cwd=tmp_path)
    assert result.returncode == 2 and f"twice.json:{problem.line_no}:7: error: stages[0].say: the key 'say' is written twice" in result.stderr


def test_a_prompt_longer_than_the_bound_is_refused_where_it_is_written():
    data = json.loads(DEFAULT)
    data["stages"][0]["say"] = "Hello. " * 200
    report = check_text(json.dumps(data, indent=2), "flow.json")
    assert report.flow is None
    [problem] = report.problems
    assert problem.path == ("stages", 0, "say") and str(MAX_PROMPT_CHARS) in problem.message
    data = json.loads(DEFAULT)
    data.setdefault("ladder", {})["acknowledgement"] = "x" * (MAX_PROMPT_CHARS + 1)
    [problem] = check_text(json.dumps(data), "flow.json").problems
    assert problem.path == ("ladder", "acknowledgement")


def test_rehearse_refuses_a_caller_file_that_is_not_audio_before_loading_models(tmp_path):
    text = tmp_path / "caller.wav"
    text.write_text("not audio at all\n")
    line = one_error_line(lull("rehearse", "--backend", "file", "--caller", str(text), "--headless"), "--caller")
    assert "not an audio file Lull can read" in line and "Format not recognised" in line
    empty = tmp_path / "empty.wav"
    soundfile.write(empty, np.zeros(0, np.float32), 16000)
    one_error_line(lull("rehearse", "--backend", "file", "--caller", str(empty), "--headless"), "the recording is empty")


def test_sessions_show_prints_the_header_as_lines_not_json(tmp_path):
    record = tmp_path / "takes"
    assert lull("simulate", "tests/scenarios/default_hold_then_answer.json", "--record", str(record),
                cwd=os.path.dirname(os.path.dirname(__file__))).returncode == 0
    shown = lull("sessions", "show", str(record / "default_hold_then_answer"))
    assert shown.returncode == 0
    head = shown.stdout.splitlines()[:4]
    assert head[0].startswith("recorded ") and "journal schema 1" in head[0]
    assert head[1].split() == ["source", "scenario", "default_hold_then_answer"]
    assert head[2].startswith("flow ") and "reference_code (sha256:" in head[2]
    assert not any(line.lstrip().startswith(("{", '"')) for line in head)


def test_help_examples_fit_an_80_column_terminal():
    env = {**os.environ, "COLUMNS": "80"}
    result = subprocess.run([LULL, "rehearse", "--help"], capture_output=True, text=True, env=env, timeout=60)
    lines = result.stdout.splitlines()
    printf = [i for i, line in enumerate(lines) if "printf" in line]
    assert printf, result.stdout
    [i] = printf
    assert "lull rehearse --backend text --headless" in lines[i]  # the whole example on one line
    assert "\\n" in lines[i]  # the newlines it pipes are written as \n, not broken lines


@pytest.mark.parametrize(("args", "says"), [
    (["--backend", "pipecat", "--telephony", "foo"], ["--telephony foo: expected twilio"]),
    (["--backend", "file", "--telephony", "twilio"],
     ["--telephony twilio: only the pipecat backend runs a telephony transport", "not --backend file"]),
    (["--backend", "text", "--telephony", "twilio"], ["not --backend text"]),
    (["--backend", "pipecat", "--telephony", "twilio", "--no-caller"], ["--telephony twilio needs --caller caller.wav"]),
], ids=["unknown carrier", "file backend", "text backend", "no caller"])
def test_rehearse_refuses_telephony_it_cannot_run_before_any_model_loads(tmp_path, args, says):
    caller = tmp_path / "caller.wav"
    soundfile.write(caller, np.zeros(1600, np.float32), 16000)
    journal = tmp_path / "take"
    with_caller = [] if "--no-caller" in args else ["--caller", str(caller)]
    args = [a for a in args if a != "--no-caller"]
    one_error_line(lull("rehearse", *args, *with_caller, "--headless", "--journal", str(journal)), *says)
    assert not journal.exists()
