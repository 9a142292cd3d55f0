"""Smoke test: start `lull` in a real terminal (tmux) at 80x24 and 160x48, see the rehearse
screen with every prompt's words uncut, inject, quit."""

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

LULL = Path(sys.executable).parent / "lull"
# what the bundled flow says before the first silence (greeting, disclosure, question)
PROMPTS = [
    "Hello, this is the reference desk.",
    "This call may be recorded for quality and training purposes.",
    "What is your reference code?",
]


def capture(session: str) -> str:
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout


def wait_for(session: str, *texts: str, timeout: float = 30.0) -> str:
    """The first screen that shows every one of `texts` (a screen is painted in pieces:
    one capture may hold the title and the footer before the panels between them)."""
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = capture(session)
        if all(text in screen for text in texts):
            return screen
        time.sleep(0.2)
    raise AssertionError(f"{texts!r} did not all appear within {timeout}s; the screen was:\n{screen}")


def transcript_text(screen: str) -> str:
    """The transcript box's lines joined: the text between the first pair of box borders
    on each row from the transcript's title down to its bottom border."""
    rows = screen.splitlines()
    start = next(i for i, row in enumerate(rows) if "transcript" in row)
    words = []
    for row in rows[start + 1 :]:
        if row.startswith("╰"):
            break
        inner = row[1:].split("│", 1)[0] if row.startswith("│") else ""
        words.append(inner.strip())
    return " ".join(" ".join(words).split())


def wait_for_prompts(session: str, timeout: float = 40.0) -> str:
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = transcript_text(capture(session))
        if all(prompt in text for prompt in PROMPTS):
            return text
        time.sleep(0.3)
    raise AssertionError(f"the prompts did not all appear uncut; the transcript read:\n{text}\n\n{capture(session)}")


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_lull_opens_the_rehearse_screen_injects_and_quits(tmp_path, size):
    if shutil.which("tmux") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("tmux is missing in CI: .ci/setup should install it")
        pytest.skip("tmux is not installed (apt-get install tmux)")
    session = f"lull-smoke-{uuid.uuid4().hex[:8]}"
    # a new user's terminal: no audio server from other tests, so lull says so and opens on text
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PULSE_", "ALSA_"))}
    env["TERM"] = "xterm-256color"
    width, height = size
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", str(width), "-y", str(height), "-c", str(tmp_path), str(LULL)],
        check=True,
        env=env,
    )
    try:
        wait_for(session, "silence ladder", "transcript", "timer lane", "event log")
        # every prompt's words, uncut, in the transcript (wrapped lines joined)
        text = wait_for_prompts(session)
        for prompt in PROMPTS:
            assert prompt in text
        for row in capture(session).splitlines():  # nothing drawn past the terminal's edge
            assert len(row) <= width
        if height >= 48:  # the right-hand column shows its lower panels too
            wait_for(session, "prompt lane", "fallback routes", timeout=10)
        subprocess.run(["tmux", "send-keys", "-t", session, "F4"], check=True)
        wait_for(session, "RECOVERY")
        subprocess.run(["tmux", "send-keys", "-t", session, "F1"], check=True)
        help_screen = wait_for(session, "Generation")
        assert re.search(r"Stale rejection|Origin", help_screen)
        subprocess.run(["tmux", "send-keys", "-t", session, "Escape"], check=True)
        time.sleep(0.5)
        subprocess.run(["tmux", "send-keys", "-t", session, "C-q"], check=True)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            alive = subprocess.run(["tmux", "has-session", "-t", session], capture_output=True).returncode == 0
            if not alive:
                break
            time.sleep(0.2)
        else:
            raise AssertionError("lull did not quit on ctrl+q:\n" + capture(session))
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
