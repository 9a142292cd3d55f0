"""Smoke test: start `lull` in a real terminal (tmux), see the rehearse screen, inject, quit."""

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

LULL = Path(sys.executable).parent / "lull"


def capture(session: str) -> str:
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout


def wait_for(session: str, text: str, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = capture(session)
        if text in screen:
            return screen
        time.sleep(0.2)
    raise AssertionError(f"{text!r} did not appear within {timeout}s; the screen was:\n{screen}")


def test_lull_opens_the_rehearse_screen_injects_and_quits(tmp_path):
    if shutil.which("tmux") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("tmux is missing in CI: .ci/setup should install it")
        pytest.skip("tmux is not installed (apt-get install tmux)")
    session = f"lull-smoke-{uuid.uuid4().hex[:8]}"
    # a new user's terminal: no audio server from other tests, so lull says so and opens on text
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PULSE_", "ALSA_"))}
    env["TERM"] = "xterm-256color"
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", "140", "-y", "48", "-c", str(tmp_path), str(LULL)],
        check=True,
        env=env,
    )
    try:
        screen = wait_for(session, "silence ladder")
        assert "timer lane" in screen and "prompt lane" in screen and "fallback routes" in screen
        wait_for(session, "What is your reference code?")
        subprocess.run(["tmux", "send-keys", "-t", session, "F4"], check=True)
        wait_for(session, "RECOVERY")
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
