"""Lull without the pipecat extra: everything else runs as before, and what needs
Pipecat says so in one line (a stand-in `pipecat` module that fails to import, as a
missing package does)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def no_pipecat(tmp_path):
    (tmp_path / "pipecat.py").write_text("raise ImportError(\"No module named 'pipecat'\")\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}


def lull(env, *args):
    return subprocess.run([sys.executable, "-c", "from console.cli import main; main()", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args", [
    ("incidents", "run", "--via", "pipecat"),
    ("rehearse", "reference_code", "--backend", "pipecat", "--headless"),
    ("bench", "turn", "--backend", "pipecat"),
])
def test_what_needs_pipecat_says_so_in_one_line(no_pipecat, args):
    done = lull(no_pipecat, *args)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr + done.stdout
    message = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
    assert len(message) == 1 and "pip install 'lull-console[pipecat]'" in message[0], message


def test_the_rest_of_lull_runs_as_before_without_pipecat(no_pipecat):
    done = lull(no_pipecat, "incidents", "run", "seven_waits")
    assert done.returncode == 0, done.stderr
    assert "1 of 1 incidents passed" in done.stdout
