"""Where the capture stream really is (design V8): a moved input is a transport event.

When a microphone is unplugged, PulseAudio (and PipeWire's pulse server) moves its
capture streams to another source, often the monitor of an output: the stream keeps
running and PortAudio never knows. `InputMoveWatch` asks the audio server instead:
it follows `pactl subscribe` and, when a source or a capture stream changes, looks up
this process's capture streams (`pactl -f json list source-outputs`) and says when the
stream's source is no longer the one it started on.

Without pactl or a pulse server it does nothing (`start()` returns False): media health
(digital zeros, no callbacks, stream errors) still sees a dead or vanished input.
Everything here runs in one reader thread; the callback is handed off by the caller.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Callable

MOVED = "device_moved"
RESTORED = "device_restored"


def _run_json(args: list[str], env: dict[str, str] | None) -> list[dict]:
    out = subprocess.run(["pactl", "-f", "json", *args], env=env, capture_output=True, text=True, timeout=5)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip() or f"pactl exited with {out.returncode}")
    data = json.loads(out.stdout or "[]")
    return data if isinstance(data, list) else []


class InputMoveWatch:
    """`on_change(kind, detail)` with kind MOVED (detail "mic -> speaker.monitor
    (monitor)") or RESTORED, from the reader thread."""

    def __init__(self, on_change: Callable[[str, str], None], *, pid: int | None = None, env: dict[str, str] | None = None) -> None:
        self._on_change = on_change
        self._pid = str(pid if pid is not None else os.getpid())
        self._env = env
        self._proc: subprocess.Popen | None = None
        self._thread: threading.Thread | None = None
        self._home: dict[int, int] = {}  # our source-output index -> the source it began on
        self._known: dict[int, dict] = {}  # every source seen, so a vanished one keeps its name
        self._moved = False
        self.events = 0
        self.error: str | None = None

    def _ours(self) -> dict[int, int]:
        found = {}
        for so in _run_json(["list", "source-outputs"], self._env):
            props = so.get("properties") or {}
            if str(props.get("application.process.id")) == self._pid and "source" in so:
                found[int(so["index"])] = int(so["source"])
        return found

    def _sources(self) -> dict[int, dict]:
        sources = {int(s["index"]): s for s in _run_json(["list", "sources"], self._env)}
        # an unplugged microphone is gone from the next listing: remember what it was called
        self._known.update(sources)
        return sources

    def _name(self, sources: dict[int, dict], index: int) -> str:
        s = sources.get(index) or self._known.get(index)
        if s is None:
            return f"source #{index}"
        monitor = " (monitor of an output)" if s.get("monitor_source") not in (None, "", "n/a") else ""
        return f"{s.get('name', index)}{monitor}"

    def start(self) -> bool:
        """Begin watching the streams this process has open now; False if it cannot."""
        if shutil.which("pactl") is None:
            self.error = "pactl not found"
            return False
        try:
            self._home = self._ours()
            self._sources()  # learn the names now, while the microphone is still there
        except (OSError, RuntimeError, ValueError, subprocess.TimeoutExpired) as exc:
            self.error = str(exc)[:120]
            return False
        if not self._home:
            self.error = "no capture stream of this process on the audio server"
            return False
        try:
            self._proc = subprocess.Popen(
                ["pactl", "subscribe"], env=self._env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL, text=True,
            )
        except OSError as exc:
            self.error = str(exc)[:120]
            return False
        self._thread = threading.Thread(target=self._read, name="lull-input-watch", daemon=True)
        self._thread.start()
        return True

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            if "source-output" not in line and "on source #" not in line:
                continue
            self.events += 1
            try:
                self._look()
            except (OSError, RuntimeError, ValueError, subprocess.TimeoutExpired) as exc:
                self.error = str(exc)[:120]

    def _look(self) -> None:
        now = self._ours()
        moved = [(i, home, now[i]) for i, home in self._home.items() if i in now and now[i] != home]
        if moved and not self._moved:
            sources = self._sources()
            _, home, there = moved[0]
            self._moved = True
            self._on_change(MOVED, f"{self._name(sources, home)} -> {self._name(sources, there)}")
        elif self._moved and not moved and any(i in now for i in self._home):
            self._moved = False
            self._on_change(RESTORED, "back on its own source")

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)
