"""Deterministic console fixtures: a quick flow, a silent backend, a hand-driven clock."""

from __future__ import annotations

import json

from sessions.flowfiles import check_data, library_flow_path


def quick_flow_data() -> dict:
    data = json.loads(library_flow_path("reference_code").read_text())
    data["ladder"] = {
        "stages": [
            {"name": "quiet_wait", "wait_ms": 400},
            {"name": "gentle_check", "wait_ms": 400, "prompt": "Take your time."},
            {"name": "alternative_route", "wait_ms": 400, "prompt": "We can carry on without it.", "routes": ["continue_without_code"]},
            {"name": "safe_close", "wait_ms": 200, "prompt": "Nothing was changed. Goodbye.", "closes": True},
        ],
        "hold_ms": 600, "hold_budget_ms": 1200, "episode_ms": 8000, "filler_after_ms": 100,
    }
    data["tools"][0]["latency_ms"] = 300
    return data


def compile_data(data: dict):
    report = check_data(data, "test flow")
    assert report.flow is not None, report.problems
    return report.flow


class SilentBackend:
    """Speaks nowhere; tests report playback themselves, so every run is identical."""

    name = "silent"

    def __init__(self):
        self.spoken = []
        self.cancelled = []
        self.on_line = lambda who, text: None
        self.lose_next_completion = False
        self.delay_next_completion_ms = 0.0

    def attach(self, session):
        self.session = session

    async def start(self):
        pass

    def speak(self, prompt):
        self.spoken.append(prompt)
        self.on_line("agent", prompt.text)

    def cancel(self, token):
        self.cancelled.append(token)

    def set_end_of_speech(self, ms):
        pass

    def say(self, text):
        from ladder import CallerUtterance, TurnEnded, TurnStarted
        from ladder.flow.understanding.text import LexicalMatcher

        spec = self.session.flow.spec
        intent, score = LexicalMatcher(dict(spec.intents), spec.intent_threshold).match(text)
        n = len(self.spoken) + 100
        self.on_line("caller", text)
        self.session.feed(TurnStarted(f"t{n}", n))
        self.session.feed(TurnEnded(f"t{n}", n))
        self.session.feed(CallerUtterance(f"t{n}", n, text, intent, score))

    async def close(self):
        pass


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t

    def advance(self, seconds: float):
        self.t += seconds


def journal_text_without_clocks(path) -> str:
    """A journal's lines with the wall-clock fields removed: timestamps hold arbitrary
    digits ("...T21:54:48.214821Z") that must not be mistaken for a leaked value."""
    import json
    from pathlib import Path

    lines = []
    for line in Path(path).read_text().splitlines():
        record = json.loads(line)
        record.pop("wall", None)
        record.pop("created", None)
        lines.append(json.dumps(record))
    return "\n".join(lines)


def held_matcher(data: dict):
    """A matcher whose build waits until the returned event is set (a slow machine's
    classifier build, on demand): (voices.understanding.interpret.BackgroundMatcher, release event)."""
    import threading

    from ladder.flow.understanding.text import LexicalMatcher
    from voices.understanding.interpret import BackgroundMatcher

    intents = dict(compile_data(data).spec.intents)
    release = threading.Event()

    def build():
        release.wait(60)  # released by the test; the bound only ends a test that failed first
        return LexicalMatcher(intents, 0.5)

    return BackgroundMatcher(build), release
