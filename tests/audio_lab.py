"""A real microphone and speaker with no sound card: a private PulseAudio server.

Two null sinks stand in for the hardware: the program plays into sink `speaker` (the test
records `speaker.monitor`), and whatever the test plays into sink `micfeed` the program
hears on source `mic`. PortAudio reaches them through the ALSA "pulse" plugin under the
names test_mic / test_speaker (asound.conf), or "pulse"/"default" (default source `mic`,
default sink `speaker`). The config files live in tests/audio_lab_files/ and are copied
into a fresh 0700 runtime dir per server, so nothing depends on a shared folder.

Use it from a test file with `from audio_lab import pulse_lab` (the fixture is session
scoped: one server for the whole run, environment restored at the end).

Gotchas (measured): PortAudio scans devices when sounddevice is imported, so the client
environment is set first and sounddevice re-initialised if it was already imported; a
null-sink monitor delivers exact zeros while nothing plays, so `noise_floor()` plays a
very low noise into the mic for tests that need a live-looking room; start an input
stream and wait for its first callback before feeding the mic.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

LAB_FILES = Path(__file__).resolve().parent / "audio_lab_files"
CONFIG_FILES = ("test.pa", "asound.conf", "client.conf")
ALSA_CONF = "/usr/share/alsa/alsa.conf"
REQUIRED_TOOLS = ("pulseaudio", "pactl", "paplay", "parecord")
INSTALL_HINT = (
    "apt-get install -y --no-install-recommends pulseaudio pulseaudio-utils libportaudio2 "
    "alsa-utils libasound2-plugins (or run .ci/setup)"
)


def _missing_pieces() -> list[str]:
    missing = [tool for tool in REQUIRED_TOOLS if shutil.which(tool) is None]
    plugin = "libasound_module_pcm_pulse.so"
    if not any(glob.glob(f"{d}/{plugin}") for d in ("/usr/lib/*/alsa-lib", "/usr/lib*/alsa-lib", "/usr/lib/alsa-lib")):
        missing.append("the ALSA pulse plugin (libasound2-plugins)")
    if not os.path.exists(ALSA_CONF):
        missing.append(ALSA_CONF)
    return missing


def _unavailable(message: str) -> None:
    """In CI the audio tests must run: fail there, skip elsewhere."""
    if os.environ.get("CI") == "true":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def write_wav(path: Path, audio: np.ndarray, samplerate: int) -> Path:
    import soundfile

    soundfile.write(str(path), np.asarray(audio, dtype=np.float32), samplerate, subtype="PCM_16")
    return path


def tone(freq: float, seconds: float, samplerate: int, amplitude: float = 0.5) -> np.ndarray:
    t = np.arange(round(seconds * samplerate)) / samplerate
    return (amplitude * np.sin(2 * np.pi * freq * t)).astype(np.float32)


@dataclass
class Capture:
    """A running `parecord` of speaker.monitor; stop() finalises the WAV and returns it."""

    path: Path
    process: subprocess.Popen
    started_ms: float

    def stop(self) -> Path:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # parecord drains and closes the file
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.path


@dataclass
class NoiseFloor:
    """Low noise played into the mic in a loop until stop()."""

    lab: PulseLab
    wav: Path
    _stop: threading.Event = field(default_factory=threading.Event)
    _proc: subprocess.Popen | None = None
    _thread: threading.Thread | None = None

    def start(self) -> NoiseFloor:
        self._thread = threading.Thread(target=self._loop, name="lab-noise-floor", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._proc = self.lab.play_into_mic(self.wav, wait=False)
            while self._proc.poll() is None and not self._stop.is_set():
                time.sleep(0.05)

    def stop(self) -> None:
        self._stop.set()
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=5)
        if self._thread is not None:
            self._thread.join(timeout=5)


class EchoPath:
    """A module-loopback speaker.monitor -> micfeed while the `with` block runs."""

    def __init__(self, lab: PulseLab, volume_percent: int, latency_ms: int) -> None:
        self.lab, self.volume, self.latency = lab, volume_percent, latency_ms
        self.module: str | None = None

    def __enter__(self) -> EchoPath:
        self.module = self.lab.pactl(
            "load-module", "module-loopback", "source=speaker.monitor", "sink=micfeed", f"latency_msec={self.latency}"
        ).stdout.strip()
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:  # the loopback's sink input appears a moment later
            for sink_input in json.loads(self.lab.pactl("-f", "json", "list", "sink-inputs").stdout or "[]"):
                if str(sink_input.get("owner_module")) == self.module:
                    self.lab.pactl("set-sink-input-volume", str(sink_input["index"]), f"{self.volume}%")
                    return self
            time.sleep(0.05)
        self.__exit__()
        raise RuntimeError("the echo loopback has no sink input")

    def __exit__(self, *exc: object) -> None:
        if self.module:
            self.lab.pactl("unload-module", self.module, check=False)
            self.module = None


class PulseLab:
    """One private PulseAudio server in its own runtime dir."""

    def __init__(self) -> None:
        self.runtime = Path(tempfile.mkdtemp(prefix="lull-pulse-"))  # mkdtemp: mode 0700
        os.chmod(self.runtime, 0o700)
        for name in CONFIG_FILES:
            shutil.copyfile(LAB_FILES / name, self.runtime / name)
        rt = str(self.runtime)
        self.server_env = {
            "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": rt,
            "PULSE_RUNTIME_PATH": rt,
            "PULSE_STATE_PATH": rt,
            "PULSE_CLIENTCONFIG": f"{rt}/client.conf",
        }
        # what every client (this process, pactl, paplay, PortAudio's ALSA plugin) needs
        self.env = {
            "PULSE_SERVER": f"unix:{rt}/native",
            "PULSE_CLIENTCONFIG": f"{rt}/client.conf",
            "PULSE_COOKIE": f"{rt}/cookie",
            "PULSE_RUNTIME_PATH": rt,
            "ALSA_CONFIG_PATH": f"{ALSA_CONF}:{rt}/asound.conf",
        }
        self.server: subprocess.Popen | None = None
        self._saved_env: dict[str, str | None] = {}
        self._children: list[subprocess.Popen] = []
        self._noise_wav: Path | None = None

    # -- lifecycle --

    def start(self, timeout: float = 10.0) -> None:
        self.server = subprocess.Popen(
            [
                "pulseaudio",
                "--daemonize=no",
                "--system=false",
                "--exit-idle-time=-1",
                "--use-pid-file=no",
                "-n",
                "-F",
                str(self.runtime / "test.pa"),
                f"--log-target=file:{self.runtime / 'pulse.log'}",
            ],
            env=self.server_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while True:
            if self.server.poll() is not None:
                raise RuntimeError(f"pulseaudio exited with {self.server.returncode}; log: {self.log_tail()}")
            if self.pactl("info", check=False).returncode == 0:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"pulseaudio did not answer within {timeout} s; log: {self.log_tail()}")
            time.sleep(0.03)
        self._apply_client_env()

    def _apply_client_env(self) -> None:
        for key, value in self.env.items():
            self._saved_env.setdefault(key, os.environ.get(key))  # the first start saves
            os.environ[key] = value
        _reinit_sounddevice()

    def crash_server(self) -> None:
        """Kill our server (by its own pid) as a crash would: every stream loses its device."""
        if self.server is not None and self.server.poll() is None:
            self.server.kill()
            self.server.wait(timeout=5)

    def restart(self) -> None:
        """Start the server again in the same runtime dir (same socket, same devices)."""
        self.crash_server()
        self.start()

    def stop(self) -> None:
        for child in self._children:
            if child.poll() is None:
                child.terminate()
                try:
                    child.wait(timeout=3)
                except subprocess.TimeoutExpired:
                    child.kill()
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved_env.clear()
        if self.server is not None and self.server.poll() is None:
            self.server.terminate()  # our own server, by its own pid
            try:
                self.server.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait()
        _reinit_sounddevice()
        shutil.rmtree(self.runtime, ignore_errors=True)

    def log_tail(self, lines: int = 5) -> str:
        try:
            text = (self.runtime / "pulse.log").read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return " | ".join(text[-lines:])

    # -- helpers for tests --

    def client_env(self) -> dict[str, str]:
        return {**os.environ, **self.env}

    def pactl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["pactl", *args], env=self.client_env(), capture_output=True, text=True, check=check, timeout=10
        )

    def play_into_mic(self, wav_path: str | Path, wait: bool = True) -> subprocess.Popen:
        """Play a WAV into sink `micfeed`, i.e. into the program's microphone."""
        proc = subprocess.Popen(
            ["paplay", "--device=micfeed", str(wav_path)],
            env=self.client_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self._children.append(proc)
        if wait:
            proc.wait(timeout=60)
            if proc.returncode != 0:
                raise RuntimeError(f"paplay failed: {proc.stderr.read().decode(errors='replace') if proc.stderr else ''}")
        return proc

    def start_capture(self, path: str | Path) -> Capture:
        """Record what the program plays (speaker.monitor) into a WAV until stop()."""
        proc = subprocess.Popen(
            ["parecord", "--device=speaker.monitor", "--latency-msec=20", "--file-format=wav", str(path)],
            env=self.client_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._children.append(proc)
        return Capture(Path(path), proc, time.monotonic() * 1000.0)

    def noise_floor(self, level_dbfs: float = -60.0) -> NoiseFloor:
        """Play a low white noise into the mic until stop(): a quiet room, not a dead one."""
        if self._noise_wav is None:
            rng = np.random.default_rng(7)
            sigma = 10 ** (level_dbfs / 20.0)
            self._noise_wav = write_wav(
                self.runtime / "noise_floor.wav", rng.normal(0.0, sigma, 16000 * 30), 16000
            )
        return NoiseFloor(self, self._noise_wav).start()

    def echo_path(self, volume_percent: int = 40, latency_ms: int = 30) -> EchoPath:
        """The microphone hears the speaker, as a laptop's does: a loopback from the
        speaker's monitor into the mic feed, `latency_ms` late, at `volume_percent`
        (40 %: about -8 dB). A context manager; unloaded at exit."""
        return EchoPath(self, volume_percent, latency_ms)

    def _mic_module(self) -> str | None:
        for line in self.pactl("list", "short", "modules").stdout.splitlines():
            parts = line.split("\t")
            if len(parts) >= 3 and parts[1] == "module-remap-source" and "source_name=mic" in parts[2]:
                return parts[0]
        return None

    def unload_mic(self) -> None:
        """Unplug the microphone: unload the remap-source module that is source `mic`."""
        module = self._mic_module()
        if module is None:
            raise RuntimeError("the mic module is not loaded")
        self.pactl("unload-module", module)

    def restore_mic(self) -> None:
        """Plug it back in as test.pa had it (source `mic`, its keeper loopback, default)."""
        if self._mic_module() is not None:
            return
        self.pactl("load-module", "module-remap-source", "source_name=mic", "master=micfeed.monitor")
        self.pactl("load-module", "module-loopback", "source=mic", "sink=discard", "latency_msec=20")
        self.pactl("suspend-sink", "micfeed", "1")
        self.pactl("suspend-sink", "micfeed", "0")
        self.pactl("set-default-source", "mic")


def _reinit_sounddevice() -> None:
    """PortAudio lists devices once, at import: make it look again."""
    sd = sys.modules.get("sounddevice")
    if sd is not None:
        sd._terminate()
        sd._initialize()


@pytest.fixture(scope="session")
def pulse_lab() -> Iterator[PulseLab]:
    missing = _missing_pieces()
    if missing:
        _unavailable(f"PulseAudio is not installed: missing {', '.join(missing)}; {INSTALL_HINT}")
    try:
        import sounddevice  # noqa: F401  (needs libportaudio2)
    except OSError as exc:
        _unavailable(f"PortAudio is not installed ({exc}); {INSTALL_HINT}")
    lab = PulseLab()
    try:
        lab.start()
    except Exception as exc:  # noqa: BLE001  (any failure to start is a failed lab)
        lab.stop()
        pytest.fail(f"the private PulseAudio server did not start: {exc}", pytrace=False)
    try:
        yield lab
    finally:
        lab.stop()
