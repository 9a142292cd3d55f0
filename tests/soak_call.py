"""A long headless call, as its own process: the soak and crash tests drive it.

    python tests/soak_call.py JOURNAL_DIR < lines

It runs what `lull rehearse --backend text --headless --journal DIR` runs, on the
default flow with its bounds widened so thousands of turns fit in one call, with
fast simulated playback, and typed lines taken as they come (a line that arrives
while the agent speaks is a barge-in). On stderr it prints one JSON line of figures:
typed turns heard, outcome, and traced memory after the warm-up and at the end.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from console.headless import rehearse_headless  # noqa: E402
from sessions.live import LiveSession  # noqa: E402
from voices.backends.text import TextBackend  # noqa: E402
from sessions.flowfiles import check_data, library_flow_path  # noqa: E402

WARM_UP = 300  # typed turns before the first memory reading


def soak_flow_data() -> dict:
    data = json.loads(library_flow_path("reference_code").read_text())
    data["ladder"] = {
        "stages": [
            # long enough that a loaded 2-core machine does not walk the ladder to its
            # close between typed turns before the mix is through: 300 ms, then 800 ms,
            # let it close at turn 1,247 and 1,253 of 1,591 (two soaks or a suite run
            # beside two busy loops); the mix's lines come milliseconds apart, so a
            # 5 s window fires only when the process is starved that long
            {"name": "quiet_wait", "wait_ms": 5000},
            {"name": "gentle_check", "wait_ms": 5000, "prompt": "Take your time."},
            {"name": "alternative_route", "wait_ms": 5000, "prompt": "We can carry on without it.", "routes": ["continue_without_code"]},
            {"name": "safe_close", "wait_ms": 200, "prompt": "Nothing was changed. Goodbye.", "closes": True},
        ],
        "hold_ms": 400, "hold_budget_ms": 3_600_000, "episode_ms": 3_600_000, "filler_after_ms": 100,
        "recovery_ms": 3_600_000,
    }
    for stage in data["stages"]:
        if "escalate_after" in stage.get("repair", {}):
            stage["repair"]["escalate_after"] = 100_000  # thousands of turns in one question
    data["tools"][0]["latency_ms"] = 50
    return data


def main() -> None:
    folder = Path(sys.argv[1])
    report = check_data(soak_flow_data(), "soak flow")
    assert report.flow is not None, report.problems
    backend = TextBackend(ms_per_word=2, start_delay_ms=1)
    session = LiveSession(report.flow, backend, journal_dir=folder)
    figures: dict = {"turns": 0}
    tracemalloc.start()

    def say(text: str) -> None:  # counts the typed turns the call lived to hear
        figures["turns"] += 1
        if figures["turns"] == WARM_UP:
            figures["warm_bytes"] = tracemalloc.get_traced_memory()[0]
            figures["warm_turns"] = WARM_UP
        backend.say(text)

    outcome = asyncio.run(rehearse_headless(session, say, lines=sys.stdin, write=lambda line: None))
    figures["end_bytes"] = tracemalloc.get_traced_memory()[0]
    figures["outcome"] = outcome
    print(json.dumps(figures), file=sys.stderr)


if __name__ == "__main__":
    main()
