"""Lull without the pipecat or the livekit extra: everything else runs as before, and
what needs the framework says so in one line (a stand-in `pipecat` module, or
`livekit.agents` package, that fails to import, as a missing package does; `livekit`
itself is a namespace the core's `livekit` wheel also fills)."""

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


@pytest.fixture
def no_livekit_agents(tmp_path):
    (tmp_path / "livekit" / "agents").mkdir(parents=True)
    (tmp_path / "livekit" / "agents" / "__init__.py").write_text("raise ImportError(\"No module named 'livekit.agents'\")\n")
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
    one_line(lull(no_pipecat, *args), "pip install 'lull-console[pipecat]'")


@pytest.mark.parametrize("args", [
    ("incidents", "run", "--via", "livekit"),
    ("rehearse", "reference_code", "--backend", "livekit", "--headless"),
    ("bench", "turn", "--backend", "livekit"),
])
def test_what_needs_livekit_says_so_in_one_line(no_livekit_agents, args):
    one_line(lull(no_livekit_agents, *args), "pip install 'lull-console[livekit]'")


def one_line(done, says: str) -> None:
    assert done.returncode == 2
    assert "Traceback" not in done.stderr + done.stdout
    message = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
    assert len(message) == 1 and says in message[0], message


@pytest.mark.parametrize("missing", ["no_pipecat", "no_livekit_agents"])
def test_the_rest_of_lull_runs_as_before_without_the_extra(missing, request):
    done = lull(request.getfixturevalue(missing), "incidents", "run", "seven_waits")
    assert done.returncode == 0, done.stderr
    assert "1 of 1 incidents passed" in done.stdout
