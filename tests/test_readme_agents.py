"""The README's agents, run as they are written there: a Pipecat pipeline and a LiveKit
AgentSession, each with a recorded caller, the real models, the framework's own VAD,
and a journal that replays CLEAN. Each runs on virtual time (`VirtualTimePolicy`: the
script's own `asyncio.run` gets a virtual-time loop, the models' work in threads takes
none of it), about 5 s each and the same on a busy machine; real time through each
framework is the device test's (test_framework_devices)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from file_caller import recorded_caller
from sessions.replay import replay
from redaction_checks import journal_leaks

ROOT = Path(__file__).resolve().parents[1]
# the agent file as written, its asyncio.run on a virtual-time loop
ON_VIRTUAL_TIME = ("import asyncio, runpy; from voices.virtual_loop import VirtualTimePolicy; "
                   "asyncio.set_event_loop_policy(VirtualTimePolicy()); runpy.run_path('agent.py', run_name='__main__')")
FRAMEWORKS = {"pipecat": "pipecat", "livekit": "livekit.agents"}  # the README's block -> what it imports


def readme_agent(framework: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(rf"<!-- {framework}-agent -->\n```python\n(.*?)```", text, re.S)
    assert found, f"the README's {framework} agent block is missing"
    return found.group(1)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_readme_agent_is_under_30_lines(framework):
    assert len(readme_agent(framework).splitlines()) < 30 + 4  # 30 lines of code, and its blank lines
    assert len([line for line in readme_agent(framework).splitlines() if line.strip()]) < 30


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_readme_agent_runs_a_call_and_its_journal_replays_clean(framework, tmp_path):
    if importlib.util.find_spec(FRAMEWORKS[framework].split(".")[0]) is None:
        pytest.skip(f"the {framework} extra is not installed")
    (tmp_path / "agent.py").write_text(readme_agent(framework), encoding="utf-8")
    recorded_caller(tmp_path / "caller.wav", (10.5, "my code is four eight two one"), (6.0, "yes it is"), (3.0, ""))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", ON_VIRTUAL_TIME], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    folder = tmp_path / "calls" / "call-1"
    journal = (folder / "journal.jsonl").read_text()
    assert f'"source":"{framework}"' in journal
    assert journal_leaks(folder / "journal.jsonl", "4821") == []
    assert '"outcome":"completed"' in journal  # the code was read back, confirmed and looked up
    assert replay(folder).verdict == "CLEAN"


LLM_AGENTS = {"pipecat-llm": "pipecat", "livekit-llm": "livekit.agents"}  # beside an LLM, the model reading the caller


@pytest.mark.parametrize("block", LLM_AGENTS)
def test_the_readme_agent_beside_an_llm_is_under_30_lines(block):
    assert len([line for line in readme_agent(block).splitlines() if line.strip()]) < 30


def test_the_readme_agents_beside_an_llm_let_the_model_drive_the_ladder_and_their_journals_make_a_corpus(tmp_path):
    """A caller who asks for time, comes back, and gives a number: through each
    framework the model's reading drives the ladder (one acknowledgement, no reminder
    while held); both readings are journaled; the journals replay CLEAN, and as a
    corpus they give agreement counts and a phrasing file of the model's labels."""
    import json

    from typer.testing import CliRunner

    from console.cli import app

    calls = tmp_path / "corpus"
    for block, module in LLM_AGENTS.items():
        if importlib.util.find_spec(module.split(".")[0]) is None:
            pytest.skip(f"the {module} extra is not installed")
        folder = tmp_path / block
        folder.mkdir()
        (folder / "agent.py").write_text(readme_agent(block), encoding="utf-8")
        recorded_caller(folder / "caller.wav", (4.5, "hold on a second"), (9.0, "okay I am back"),
                        (2.5, "it is four eight two one"), (4.0, ""))
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = subprocess.run([sys.executable, "-c", ON_VIRTUAL_TIME], cwd=folder, env=env, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr[-2000:]
        call = folder / "calls" / "call-1"
        records = [json.loads(line) for line in (call / "journal.jsonl").read_text().splitlines()[1:]]
        readings = [r for r in records if r.get("effect") == "Observation" and r.get("kind") == "model_reading"]
        assert [r["model"] for r in readings][:2] == ["wait_request", "answer" if block == "pipecat-llm" else "ready"]
        prompts = [r for r in records if r.get("effect") == "RequestPrompt"]
        held_until = readings[1]["t_ms"]
        assert [p["kind"] for p in prompts if p["t_ms"] <= held_until].count("acknowledgement") == 1
        assert not [p for p in prompts if p["kind"] == "reminder" and p["t_ms"] <= held_until]
        assert journal_leaks(call / "journal.jsonl", "4821") == []
        assert replay(call).verdict == "CLEAN"
        (calls / block).parent.mkdir(exist_ok=True)
        call.rename(calls / block)
    runner = CliRunner()
    report = runner.invoke(app, ["sessions", "report", str(calls), "--json"])
    assert report.exit_code == 0, report.output
    assert "model" in report.output and "agree" in report.output
    out = tmp_path / "labels.json"
    exported = runner.invoke(app, ["sessions", "phrasings", str(calls), "--out", str(out)])
    assert exported.exit_code == 0, exported.output
    labels = json.loads(out.read_text())
    assert labels.get("wait_request")  # "hold on a second", as the recogniser heard it
