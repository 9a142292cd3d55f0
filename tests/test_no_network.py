"""Nothing leaves the machine at run time: real `lull` commands under strace.

onnxruntime (piper's voice and both Silero VADs run on it) ships telemetry that is on by
default: a device id written into the user's cache folder at import, and a DNS lookup of
its events host about 9 s later. `voices.offline` switches it off before any model
library loads. These tests run the commands a user runs, in a private HOME and cache
folder, with the switches removed from the inherited environment (this test process has
them set, having imported `voices`), and read every connect/send the kernel saw.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import soundfile

from voices.offline import OFFLINE_ENVIRONMENT

LULL = Path(sys.executable).parent / "lull"
ORT_DEVICE_ID = Path("Microsoft", "DeveloperTools", ".onnxruntime")

# one sockaddr per match: family, port, address (IPv4 or IPv6)
_SOCKADDR = re.compile(
    r"sa_family=(?P<family>AF_INET6?), sin6?_port=htons\((?P<port>\d+)\), "
    r"(?:sin_addr=inet_addr\(\"(?P<v4>[^\"]+)\"\)|[^}]*?inet_pton\(AF_INET6, \"(?P<v6>[^\"]+)\")"
)


def require_strace() -> str:
    strace = shutil.which("strace")
    if strace is None:
        message = "strace is not installed (.ci/setup installs it)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return strace


def private_environment(root: Path) -> dict[str, str]:
    """The user's environment with a fresh HOME and cache folder, and none of Lull's
    offline switches inherited: the command must set them itself."""
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_ENVIRONMENT and k != "LULL_CACHE_DIR"}
    env["HOME"] = str(root / "home")
    env["XDG_CACHE_HOME"] = str(root / "cache")
    (root / "home").mkdir()
    (root / "cache").mkdir()
    return env


def traced(strace: str, trace: Path, args: list[str], env: dict, stdin: str = "", timeout: float = 600):
    # a hang guard, not a timing: a real-time call under strace -f, beside two busy loops,
    # took longer than 120 s (25 s on a quiet machine)
    return subprocess.run(
        # --seccomp-bpf: only the traced calls stop the process (a kernel that cannot
        # filter falls back to stopping on every call), so the call runs near full speed
        [strace, "-f", "--seccomp-bpf", "-e", "trace=connect,sendto,sendmsg,sendmmsg", "-o", str(trace), str(LULL), *args],
        input=stdin, env=env, capture_output=True, text=True, timeout=timeout,
    )


def outside_connections(trace: Path) -> list[str]:
    """Trace lines that reach a non-loopback IP address, or any DNS server."""
    bad = []
    for line in trace.read_text().splitlines():
        for m in _SOCKADDR.finditer(line):
            address = ipaddress.ip_address(m["v4"] or m["v6"])
            mapped = getattr(address, "ipv4_mapped", None)
            loopback = address.is_loopback or (mapped is not None and mapped.is_loopback)
            if int(m["port"]) == 53 or not loopback:
                bad.append(line.strip())
    return bad


def left_in(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_the_trace_parser_sees_dns_and_outside_addresses(tmp_path: Path) -> None:
    trace = tmp_path / "trace.txt"
    trace.write_text(
        '12 connect(8, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.1.2.3")}, 16) = 0\n'
        '12 connect(9, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), '
        'inet_pton(AF_INET6, "2001:db8::1", &sin6_addr), sin6_scope_id=0}, 28) = -1\n'
        '12 connect(5, {sa_family=AF_INET, sin_port=htons(4713), sin_addr=inet_addr("127.0.0.1")}, 16) = 0\n'
        '12 connect(6, {sa_family=AF_UNIX, sun_path="/run/pulse/native"}, 110) = 0\n'
        '12 connect(7, {sa_family=AF_INET6, sin6_port=htons(80), sin6_flowinfo=htonl(0), '
        'inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) = 0\n'
        '12 connect(7, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("127.0.0.53")}, 16) = 0\n'
    )
    bad = outside_connections(trace)
    assert len(bad) == 3 and "10.1.2.3" in bad[0] and "2001:db8::1" in bad[1] and "127.0.0.53" in bad[2]


def test_a_file_backend_call_sends_nothing_and_leaves_no_device_id(tmp_path: Path) -> None:
    """`lull say` then a file-backend call of about 14 s (past onnxruntime's ~9 s
    telemetry delay), both traced: no connect or send to anything but loopback, no DNS,
    and nothing written into the private HOME or cache folder but Lull's own cache of the
    intent classifier (voices.understanding.disk_cache)."""
    strace = require_strace()
    env = private_environment(tmp_path)
    caller = tmp_path / "caller.wav"
    said = traced(strace, tmp_path / "say.trace", ["say", "My code is four eight two one.", "--out", str(caller)], env)
    assert said.returncode == 0, said.stderr
    assert soundfile.info(caller).frames > 0

    journal = tmp_path / "take"
    call = traced(
        strace,
        tmp_path / "call.trace",
        ["rehearse", "--backend", "file", "--caller", str(caller), "--headless", "--journal", str(journal)],
        env,
        stdin="/sleep 14\n/quit\n",
    )
    assert call.returncode == 0, call.stderr
    assert "call ended" in call.stdout, call.stdout
    assert soundfile.info(journal / "mic.wav").duration > 12  # the call really ran that long

    for name in ("say.trace", "call.trace"):
        trace = tmp_path / name
        assert "+++ exited with 0 +++" in trace.read_text()  # strace followed the process
        assert outside_connections(trace) == [], f"{name}: network use:\n" + "\n".join(outside_connections(trace))
    for folder in ("home", "cache"):
        assert not (tmp_path / folder / ".cache" / ORT_DEVICE_ID).exists()
        assert not (tmp_path / folder / ORT_DEVICE_ID).exists()
        written = left_in(tmp_path / folder)
        if folder == "cache":  # the classifier, its training vectors and the yes/no reader, nothing else
            assert sorted(p.rsplit("-", 1)[0] for p in written) == ["lull/classifier", "lull/vectors", "lull/yes-no"], written
        else:
            assert written == [], f"written into the user's {folder} folder"


MODEL_LIBRARIES = {"onnxruntime", "piper", "faster_whisper", "wordllama", "huggingface_hub", "ctranslate2"}


def test_only_voices_loads_the_model_libraries() -> None:
    """The switches are set when `voices` is imported; that is first only while no other
    package of the project imports a model library itself."""
    import ast

    root = Path(__file__).resolve().parent.parent
    offenders = []
    for package in ("console", "sessions", "ladder"):
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    if name.split(".")[0] in MODEL_LIBRARIES:
                        offenders.append(f"{path.relative_to(root)}:{node.lineno}: {name}")
    assert offenders == [], "load these through voices/ (see voices/offline.py):\n" + "\n".join(offenders)
