"""Soak and crash: a long mixed call, and the same call killed at random points (S6).

The call runs as its own process (tests/soak_call.py: the headless text rehearsal
with a journal), fed thousands of caller lines and incident commands from a seeded
random mix, barge-ins included. Seeds are fixed, so a failure names its schedule.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sessions.journal import read_journal
from sessions.replay import replay

SOAK = Path(__file__).with_name("soak_call.py")
LEGITIMATE = {"completed", "closed_incomplete", "caller_disconnected", "input_path_failed", "deadline", "closed"}

CALLER_LINES = [
    "give me a moment", "hang on", "sorry what", "can you repeat that", "mm hmm", "I'm back",
    "I'm ready", "go somewhere and do something", "what was the question",
    "[/]", "[bold]not markup[/bold]", "can I speak to a person", "uh huh",
]
COMMANDS = [
    "/fail input", "/recover input", "/fail output", "/recover output", "/fail recognizer",
    "/recover recognizer", "/dup", "/tool lookup_reference slow 200", "/tool lookup_reference ok",
    "/tool lookup_reference fail", "/tool lookup_reference unknown",
]
ENDING = ["/recover input", "/recover output", "/recover recognizer", "/tool lookup_reference ok", "4 8 2 1", "yes"]


def soak_lines(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for _ in range(n):
        roll = rng.random()
        if roll < 0.25:
            lines.append(f"/sleep {rng.choice([0.005, 0.01, 0.02, 0.05])}")
        elif roll < 0.45:
            lines.append(rng.choice(COMMANDS))
        else:
            lines.append(rng.choice(CALLER_LINES))
    return lines + ENDING


def start(folder: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(SOAK), str(folder)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_a_long_mixed_call_ends_legitimately_with_flat_memory_and_replays_clean(tmp_path):
    lines = soak_lines(seed=13, n=2000)
    proc = start(tmp_path / "soak")
    out, err = proc.communicate("\n".join(lines) + "\n", timeout=300)
    assert proc.returncode == 0, err[-3000:]
    figures = json.loads(err.strip().splitlines()[-1])
    assert figures["outcome"] in LEGITIMATE, figures
    turns = [line for line in lines if not line.startswith("/")]
    assert figures["turns"] == len(turns), figures  # the call lived to hear every turn
    # flat but for the call's own record: the core keeps the silence controller's inputs
    # (F9 saves the live call as an incident), under a kilobyte a turn; a leak of
    # anything per input (tasks, timers, queued audio, journal buffers) breaks this
    per_turn = (figures["end_bytes"] - figures["warm_bytes"]) / (figures["turns"] - figures["warm_turns"])
    assert per_turn < 1500, figures
    journal = read_journal(tmp_path / "soak")
    assert journal.skipped == [], journal.skipped
    assert len(list(journal.inputs())) > 2000
    result = replay(tmp_path / "soak")
    assert result.verdict == "CLEAN", result.describe()


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_a_call_killed_at_a_random_point_leaves_a_journal_that_loads_and_replays(tmp_path, seed):
    rng = random.Random(seed)
    folder = tmp_path / f"killed-{seed}"
    proc = start(folder)
    proc.stdin.write("\n".join(soak_lines(seed, 2000)) + "\n")
    proc.stdin.flush()
    # the random point is in the call, not in the process's start-up (a busy machine
    # took longer than 0.5 s to import and open the journal): from the journal's first line
    journal_file = folder / "journal.jsonl"
    deadline = time.monotonic() + 120
    while not journal_file.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert journal_file.exists(), "the call never opened its journal"
    time.sleep(rng.uniform(0.5, 3.0))
    proc.kill()  # SIGKILL: no cleanup of any kind
    proc.wait(timeout=10)
    journal = read_journal(folder)  # loads whatever the kill left
    assert journal.header and journal.records, "the kill left no journal"
    result = replay(folder)
    assert result.verdict == "CLEAN", result.describe()
