"""`lull` end to end, as a user runs it: the installed command in a subprocess."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sessions.incidents import library_paths

LULL = shutil.which("lull", path=str(Path(sys.executable).parent)) or shutil.which("lull")


def lull(*args: str) -> subprocess.CompletedProcess:
    assert LULL, "the `lull` command is not installed (pip install -e .)"
    return subprocess.run([LULL, *args], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_incidents_run_passes_the_whole_library():
    result = lull("incidents", "run")
    assert result.returncode == 0, result.stdout + result.stderr
    n = len(library_paths())
    assert f"{n} of {n} incidents passed" in result.stdout
    assert "FAIL" not in result.stdout
    for path in library_paths():
        assert path.stem in result.stdout


def test_incidents_run_json_reports_each_verdict_and_count():
    result = lull("incidents", "run", "seven_waits", "duplicate_timeout", "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert [r["incident"] for r in rows] == ["seven_waits", "duplicate_timeout"]
    assert all(r["verdict"] == "PASS" for r in rows)
    assert rows[0]["counts"]["requested"] == 2  # the question and one acknowledgement


def test_a_failing_incident_exits_one_and_says_why(tmp_path):
    data = json.loads(next(p for p in library_paths() if p.stem == "duplicate_timeout").read_text())
    data["name"] = "wrong_expectation"
    data["expect"]["stage"] = "safe_close"
    path = tmp_path / "wrong_expectation.json"
    path.write_text(json.dumps(data))
    result = lull("incidents", "run", str(path))
    assert result.returncode == 1
    assert "FAIL" in result.stdout
    assert "expected stage safe_close, got gentle_check" in result.stdout


@pytest.mark.parametrize(
    "content, expected",
    [
        ('{"schema": 1, "name": "x"', "invalid JSON"),
        ('{"schema": 1, "name": "x", "title": "t", "schedule": [], "expect": {}, "bogus": 1}', "field bogus"),
    ],
)
def test_a_malformed_file_gives_one_line_and_exit_two(tmp_path, content, expected):
    path = tmp_path / "bad.json"
    path.write_text(content)
    result = lull("incidents", "run", str(path))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and expected in lines[0], result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_an_unknown_incident_name_points_to_the_list():
    result = lull("incidents", "run", "no_such_incident")
    assert result.returncode == 2
    assert "lull incidents list" in result.stderr


def test_incidents_list_names_each_incident_and_its_prohibitions():
    result = lull("incidents", "list")
    assert result.returncode == 0
    assert "seven_waits" in result.stdout and "a recovery prompt for a deliberate pause" in result.stdout


def test_help_has_examples():
    result = lull("incidents", "run", "--help")
    assert result.returncode == 0
    assert "lull incidents run seven_waits duplicate_timeout" in result.stdout


def test_record_writes_a_journal_whose_inputs_replay_to_the_same_decisions(tmp_path):
    from ladder import Controller, LadderPolicy, event_from_dict
    from sessions.journal import read_journal

    result = lull("incidents", "run", "reminder_then_resume", "--record", str(tmp_path))
    assert result.returncode == 0, result.stderr
    journal = read_journal(tmp_path / "reminder_then_resume")
    assert journal.skipped == [] and journal.header["incident"] == "reminder_then_resume"
    inputs = list(journal.inputs())
    assert inputs[0]["kind"] == "ask_question"
    # S2: inputs alone, fed to a fresh controller, reproduce every recorded decision
    controller = Controller(LadderPolicy.model_validate(journal.header["ladder_policy"]))
    replayed = []
    for record in inputs:
        replayed += [e.to_dict() for e in controller.handle(event_from_dict(record["event"]), record["t_ms"])]
    recorded = [{k: v for k, v in r.items() if k not in ("seq", "t_ms", "wall", "type")} for r in journal.decisions()]
    assert any(r.get("kind") == "stale_rejected" for r in recorded)
    assert any(r.get("effect") == "CancelPrompt" for r in recorded)
    assert replayed == recorded
    # recording again into the same folder is refused and the journal is untouched
    before = (tmp_path / "reminder_then_resume" / "journal.jsonl").read_bytes()
    again = lull("incidents", "run", "reminder_then_resume", "--record", str(tmp_path))
    assert again.returncode == 2 and "already there" in again.stderr
    assert (tmp_path / "reminder_then_resume" / "journal.jsonl").read_bytes() == before


# -- flows and the simulator ----------------------------------------------------------

SCENARIO_DIR = Path(__file__).parent / "scenarios"


def test_flow_check_accepts_the_default_flow():
    result = lull("flow", "check", "reference_code")
    assert result.returncode == 0, result.stderr
    assert "ok: 8 stages" in result.stdout


def test_flow_check_points_at_the_broken_field(tmp_path):
    from sessions.flowfiles import library_flow_path

    text = library_flow_path("reference_code").read_text().replace(
        '"escalate_to": "close_lookup_failed"', '"escalate_to": "close_failed"'
    )
    path = tmp_path / "mine.json"
    path.write_text(text)
    before = path.read_bytes()
    result = lull("flow", "check", str(path))
    assert result.returncode == 2  # a refused flow is bad input
    line_no = next(i for i, line in enumerate(text.splitlines(), 1) if '"close_failed"' in line)
    assert f"{path}:{line_no}:" in result.stderr
    assert "stages[4].repair.escalate_to: escalate_to names unknown stage 'close_failed'" in result.stderr
    assert path.read_bytes() == before  # checking never rewrites the designer's file


def test_flow_schema_is_json_schema():
    result = lull("flow", "schema")
    schema = json.loads(result.stdout)
    assert schema["title"] == "Lull flow" and "stages" in schema["properties"]


def test_simulate_runs_the_scenario_corpus():
    paths = sorted(str(p) for p in SCENARIO_DIR.glob("*.json"))
    result = lull("simulate", *paths)
    assert result.returncode == 0, result.stdout[-2000:]
    assert f"{len(paths)} of {len(paths)} scenarios passed" in result.stdout


def test_simulate_exits_one_on_a_failed_expectation(tmp_path):
    data = json.loads((SCENARIO_DIR / "default_answer_at_once.json").read_text())
    data["steps"][-1]["expect"]["outcome"] = "closed_incomplete"
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps(data))
    result = lull("simulate", str(path), "--json")
    assert result.returncode == 1
    [row] = json.loads(result.stdout)
    assert row["verdict"] == "FAIL"
    assert any("expected outcome closed_incomplete, got completed" in f for f in row["failures"])


def test_simulate_refuses_a_malformed_scenario_in_one_line(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"schema": 1, "name": "bad", "title": "t", "flow": "reference_code",
                                "steps": [{"say": "hi", "silence_ms": 5}]}))
    result = lull("simulate", str(path))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "field steps[0]" in lines[0] and "exactly one of" in lines[0]


def test_sessions_list_show_and_replay(tmp_path):
    record = tmp_path / "takes"
    assert lull("simulate", str(SCENARIO_DIR / "default_hold_then_answer.json"), "--record", str(record)).returncode == 0
    listing = lull("sessions", "list", str(record))
    assert listing.returncode == 0 and "default_hold_then_answer" in listing.stdout and "completed" in listing.stdout
    shown = lull("sessions", "show", str(record / "default_hold_then_answer"))
    assert shown.returncode == 0 and "no lines skipped" in shown.stdout and "acknowledgement" in shown.stdout
    clean = lull("sessions", "replay", str(record / "default_hold_then_answer"))
    assert clean.returncode == 0 and "CLEAN" in clean.stdout
    journal = record / "default_hold_then_answer" / "journal.jsonl"
    lines = journal.read_text().splitlines()
    header = json.loads(lines[0])
    header["flow_document"]["ladder"] = {"acknowledgement": "Of course, no hurry."}
    journal.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    drift = lull("sessions", "replay", str(record / "default_hold_then_answer"))
    assert drift.returncode == 1 and "DRIFT" in drift.stdout and "Of course, no hurry." in drift.stdout


def _no_audio_env():
    import os

    # a machine with PortAudio but no sound card and no audio server
    return {k: v for k, v in os.environ.items() if not k.startswith(("PULSE_", "ALSA_"))} | {
        "PULSE_SERVER": "unix:/nonexistent/pulse/native"
    }


def test_asking_for_audio_with_no_device_is_one_line_pointing_to_the_text_backend():
    result = subprocess.run(
        [LULL, "rehearse", "--backend", "audio", "--headless"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env=_no_audio_env(),
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--backend text" in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_the_file_backend_needs_a_caller_file(tmp_path):
    result = lull("rehearse", "--backend", "file", "--headless")
    assert result.returncode == 2 and "--caller" in result.stderr
    result = lull("rehearse", "--backend", "file", "--caller", str(tmp_path / "none.wav"), "--headless")
    assert result.returncode == 2 and "no such file" in result.stderr


def test_say_refuses_to_overwrite_and_transcribe_reads_it_back(tmp_path):
    wav = tmp_path / "q.wav"
    made = lull("say", "What is your reference code?", "--out", str(wav))
    assert made.returncode == 0 and wav.exists()
    before = wav.read_bytes()
    again = lull("say", "Something else.", "--out", str(wav))
    assert again.returncode == 2 and "nothing was overwritten" in again.stderr
    assert wav.read_bytes() == before
    heard = lull("transcribe", str(wav))
    assert heard.returncode == 0 and "reference code" in heard.stdout.lower()


def test_simulate_refuses_a_record_folder_that_clashes_before_running(tmp_path):
    scenario = Path(__file__).parent / "scenarios" / "default_answer_at_once.json"
    twice = lull("simulate", str(scenario), str(scenario), "--record", str(tmp_path / "rec"))
    assert twice.returncode == 2 and "given more than once" in twice.stderr and "Traceback" not in twice.stderr
    assert not (tmp_path / "rec").exists()  # refused before anything was recorded
    a_file = tmp_path / "afile"
    a_file.write_text("mine")
    on_file = lull("simulate", str(scenario), "--record", str(a_file))
    assert on_file.returncode == 2 and "is a file" in on_file.stderr and "Traceback" not in on_file.stderr
    assert a_file.read_text() == "mine"


def test_falling_back_to_text_does_not_tell_the_user_to_choose_text(monkeypatch):
    from console.cli import rehearse
    from voices import audio

    def no_device(spec, kind):
        raise audio.AudioUnavailable(f"no audio: no {kind} device; {audio.TEXT_BACKEND_HINT}")

    monkeypatch.setattr(audio, "resolve_device", no_device)
    chosen, notice = rehearse._choose_backend("auto", None, None)
    assert chosen == "text" and "no input device" in notice
    assert "--backend text" not in notice


def test_a_benchs_json_takes_numpys_figures(capsys):
    """`lull bench turn --json` once ended in a traceback: a target's verdict was numpy's
    bool, which json cannot write. Every bench prints JSON through one writer."""
    import json

    import numpy as np

    from console.cli.bench import echo_json

    echo_json({"met": np.float64(420.0) <= 500, "median_ms": np.float32(1.5), "gaps": np.array([1, 2]),
               "p90": float("nan"), "rows": [np.float64("nan")]})
    strict = json.loads(capsys.readouterr().out, parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))
    assert strict == {"met": True, "median_ms": 1.5, "gaps": [1, 2], "p90": None, "rows": [None]}
