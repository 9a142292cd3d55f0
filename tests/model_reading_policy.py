"""What the model-reading tests share, in Pipecat and in LiveKit: a ladder with short
waits and a hold long enough to see that nothing is said while it runs, and Lull's own
reader as a table (the tests are about the model's decision standing over it; the real
classifier has tests of its own)."""

from __future__ import annotations

from ladder import LadderPolicy, Stage

POLICY = LadderPolicy(
    stages=(
        Stage(name="quiet_wait", wait_ms=4000),
        Stage(name="gentle_check", wait_ms=4000, prompt="Are you still there?"),
        Stage(name="safe_close", wait_ms=1000, prompt="I'll end the call here.", closes=True),
    ),
    episode_ms=120_000, hold_ms=20_000, hold_budget_ms=40_000, still_waiting_ms=None, watchdog_ms=5000,
)


class Reader:
    """Lull's reader as a table: words -> intent (0.9), anything else none (0.2)."""

    def __init__(self, meanings: dict[str, str]) -> None:
        self.meanings = meanings

    def match(self, text):
        intent = self.meanings.get(text)
        return intent, 0.9 if intent else 0.2
