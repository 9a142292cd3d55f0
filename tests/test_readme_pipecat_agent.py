"""The README's Pipecat agent, run as it is written there: a recorded caller, the real
models, Pipecat's VAD and smart-turn, a journal that replays CLEAN (about 35 s)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pipecat", reason="the pipecat extra is not installed")

from file_caller import recorded_caller  # noqa: E402
from sessions.replay import replay  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def readme_agent() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- pipecat-agent -->\n```python\n(.*?)```", text, re.S)
    assert found, "the README's Pipecat agent block is missing"
    return found.group(1)


def test_the_readme_agent_is_under_30_lines():
    assert len(readme_agent().splitlines()) < 30 + 4  # 30 lines of code, and its blank lines
    assert len([line for line in readme_agent().splitlines() if line.strip()]) < 30


def test_the_readme_pipecat_agent_runs_a_call_and_its_journal_replays_clean(tmp_path):
    (tmp_path / "agent.py").write_text(readme_agent(), encoding="utf-8")
    recorded_caller(tmp_path / "caller.wav", (10.5, "my code is four eight two one"), (6.0, "yes it is"), (3.0, ""))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "agent.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    folder = tmp_path / "calls" / "call-1"
    journal = (folder / "journal.jsonl").read_text()
    assert '"source":"pipecat"' in journal
    assert not re.search(r"\b4821\b|4 8 2 1|four eight two one", journal)  # whole numbers: the wall clock's microseconds may hold the digits
    assert '"outcome":"completed"' in journal  # the code was read back, confirmed and looked up
    assert replay(folder).verdict == "CLEAN"
