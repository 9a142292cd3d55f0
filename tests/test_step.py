"""Step-through (S3): the state at any position equals the state computed from the start."""

import json
from pathlib import Path

from sessions.scenarios import load_scenario, run_scenario
from sessions.step import Cursor

SCENARIOS = Path(__file__).parent / "scenarios"


def recorded(tmp_path, name="default_hold_then_answer"):
    path = SCENARIOS / f"{name}.json"
    run_scenario(load_scenario(path), path, record_to=tmp_path / name)
    return tmp_path / name


def fresh_state(folder, index):
    cursor = Cursor(folder)
    return cursor.seek(index).state


def test_forwards_and_backwards_equal_the_state_from_the_start(tmp_path):
    folder = recorded(tmp_path)
    cursor = Cursor(folder, every=5)
    n = len(cursor)
    assert n > 20
    states = [cursor.forward().state for _ in range(n)]
    for index in (n - 1, n // 2, 7, 3, 1, 12):
        position = cursor.seek(index)
        assert position.index == index
        assert position.event == cursor.inputs[index - 1]["event"]  # the input at the cursor
        assert json.dumps(position.state, sort_keys=True) == json.dumps(fresh_state(folder, index), sort_keys=True)
        assert json.dumps(position.state, sort_keys=True) == json.dumps(states[index - 1], sort_keys=True)


def test_a_step_back_restores_a_snapshot_instead_of_replaying_from_the_start(tmp_path):
    folder = recorded(tmp_path)
    cursor = Cursor(folder, every=5)
    cursor.seek(len(cursor))
    before = cursor.replayed
    cursor.back()
    assert cursor.replayed - before <= 5  # at most one snapshot interval fed again


def test_the_position_names_the_input_and_the_decisions_on_it(tmp_path):
    folder = recorded(tmp_path)
    cursor = Cursor(folder)
    position = cursor.seek(1)
    assert position.event["kind"] == "start_call"
    assert any(d.get("effect") == "RequestPrompt" for d in position.decisions)
    assert position.state["active"] == ["greet"]


def test_audio_around_the_cursor_is_cut_from_the_session_recordings(tmp_path):
    import numpy as np
    import soundfile

    folder = recorded(tmp_path)
    soundfile.write(folder / "mic.wav", np.arange(16000 * 4, dtype=np.float32) / (16000 * 4), 16000)
    cursor = Cursor(folder)
    audio = cursor.audio_around(2000, span_ms=500)
    samples, rate, start_ms = audio["mic.wav"]
    assert rate == 16000 and len(samples) == 16000 and start_ms == 1500


def test_step_through_shows_a_masked_audio_span_as_masked(tmp_path):
    # the recording silenced the caller saying the code; stepping there says so
    import shutil
    import subprocess
    import sys

    scenario = Path(__file__).parent / "scenarios" / "default_answer_at_once.json"
    run_scenario(load_scenario(scenario), scenario, record_to=tmp_path / "s")
    journal = tmp_path / "s" / "journal.jsonl"
    last = json.loads(journal.read_text().splitlines()[-1])
    span = {"seq": last["seq"] + 1, "t_ms": last["t_ms"], "wall": last.get("wall", ""), "type": "decision",
            "effect": "Observation", "kind": "audio_masked", "track": "mic", "from_ms": 6000.0, "to_ms": 7500.0, "why": "redacted_value"}
    with journal.open("a") as f:
        f.write(json.dumps(span) + "\n")
    cursor = Cursor(tmp_path / "s")
    at = next(i for i, r in enumerate(cursor.inputs, 1) if r["t_ms"] >= 6000)
    assert [s["track"] for s in cursor.masked_around(cursor.seek(at).t_ms)] == ["mic"]
    assert cursor.masked_around(cursor.seek(0).t_ms) == []  # far from it: nothing said
    lull = shutil.which("lull", path=str(Path(sys.executable).parent))
    out = subprocess.run([lull, "sessions", "step", str(tmp_path / "s"), "--at", str(at)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "audio masked: mic.wav 6.00s-7.50s is silence (redacted_value)" in out.stdout
