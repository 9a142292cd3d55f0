"""How much of a core the console uses while nothing happens: a script that prints it.

    python tests/test_console_idle.py [--seconds 15] [--size 100x30] [--phase hold|closed] [--root DIR]

It starts `lull` in tmux (text backend), waits for the question, asks for a hold
("give me a moment": a 30 s hold in which nothing happens but countdowns), then reads
the process's CPU time from /proc over the window and prints the share of one core.
`--root` runs the console from another checkout (to compare before and after).

Not a timed test: the only test here checks the /proc reading on this process.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, in seconds (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def _capture(session: str) -> str:
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout


def _wait_for(session: str, text: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in _capture(session):
            return
        time.sleep(0.3)
    raise SystemExit(f"{text!r} did not appear:\n{_capture(session)}")


def measure(seconds: float = 15.0, size: str = "100x30", root: Path | None = None, phase: str = "hold") -> float:
    width, height = size.split("x")
    session = f"lull-idle-{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PULSE_", "ALSA_"))}
    env["TERM"] = "xterm-256color"
    if root is not None:
        env["PYTHONPATH"] = str(root)
    code = "import sys; sys.argv = ['lull']; from console.cli import main; sys.exit(main())"
    with tempfile.TemporaryDirectory() as cwd:
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", session, "-x", width, "-y", height, "-c", cwd, sys.executable, "-c", code],
            check=True,
            env=env,
        )
        try:
            _wait_for(session, "What is your reference code?")
            if phase == "hold":
                time.sleep(2.5)
                subprocess.run(["tmux", "send-keys", "-t", session, "give me a moment", "Enter"], check=True)
                _wait_for(session, "take your time")  # the acknowledgement: the hold runs
            else:  # the silent caller: the ladder walks to a safe close, then nothing at all
                _wait_for(session, "session CLOSED", timeout=120)
            time.sleep(2.0)
            pid = int(subprocess.run(["tmux", "list-panes", "-t", session, "-F", "#{pane_pid}"], capture_output=True, text=True).stdout.split()[0])
            before, started = cpu_seconds(pid), time.monotonic()
            time.sleep(seconds)
            used, elapsed = cpu_seconds(pid) - before, time.monotonic() - started
        finally:
            subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    return used / elapsed * 100.0


def test_cpu_seconds_reads_this_process():
    start = cpu_seconds(os.getpid())
    sum(i * i for i in range(200_000))
    assert cpu_seconds(os.getpid()) >= start >= 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--size", default="100x30")
    parser.add_argument("--root", type=Path, default=None, help="run the console from this checkout")
    parser.add_argument("--phase", choices=["hold", "closed"], default="hold", help="during a hold, or after the call closed")
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        raise SystemExit("tmux is not installed")
    share = measure(args.seconds, args.size, args.root, args.phase)
    when = "during a hold" if args.phase == "hold" else "after the call closed"
    print(f"idle console ({args.size}, {when}, {args.seconds:g}s): {share:.1f} % of one core")
