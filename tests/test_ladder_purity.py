"""The core stays pure: no clock, no I/O, no threads, usable with no audio stack."""

import ast
import subprocess
import sys
from pathlib import Path

LADDER = Path(__file__).resolve().parent.parent / "ladder"
FORBIDDEN = {
    "time", "asyncio", "threading", "multiprocessing", "concurrent", "socket", "subprocess",
    "os", "io", "pathlib", "shutil", "random", "datetime", "textual", "sounddevice",
    "faster_whisper", "piper", "numpy", "soundfile", "console", "voices", "sessions",
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_no_ladder_module_imports_a_clock_io_thread_or_audio_module():
    offenders = {
        f"{path.name}: {sorted(imported_modules(path) & FORBIDDEN)}"
        for path in sorted(LADDER.rglob("*.py"))
        if imported_modules(path) & FORBIDDEN
    }
    assert not offenders, f"ladder must stay pure: {offenders}"


def test_the_check_sees_a_forbidden_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import time\nfrom threading import Lock\n")
    assert imported_modules(bad) & FORBIDDEN == {"time", "threading"}


def test_ladder_imports_and_runs_with_the_audio_stack_blocked():
    # a fresh interpreter in which importing any audio or UI package fails
    code = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {'numpy','sounddevice','faster_whisper','piper','textual','soundfile','onnxruntime','ctranslate2'}:
            raise ImportError('blocked: ' + name)
sys.meta_path.insert(0, Block())
from ladder import Controller, AskQuestion, PlaybackCompleted
c = Controller()
c.handle(AskQuestion('q', 'What is your reference code?'), 0)
c.handle(PlaybackCompleted(1), 1000)
print(c.next_deadline())
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "9000.0"
