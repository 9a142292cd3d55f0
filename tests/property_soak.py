"""The ladder's property tests at a raised example count, one process per policy.

    python tests/property_soak.py --schedules 100000 [--steps 60]

Runs the stateful hypothesis tests of tests/test_ladder_properties.py with
`--schedules` random schedules in all, split evenly over the two policies, in two
processes at once (one per core). Prints each policy's count, time and verdict;
exits non-zero if any invariant failed (the failing schedule is in the output, as
hypothesis prints it). The CI suite runs the same tests at 200 schedules per policy.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = ("TestLadderPropertiesDefaultPolicy", "TestLadderPropertiesSmallPolicy")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=100_000, help="random schedules in all (default 100000)")
    parser.add_argument("--steps", type=int, default=60, help="steps per schedule (default 60)")
    args = parser.parse_args()
    if args.schedules < len(CASES) or args.steps < 1:
        parser.error("--schedules must be at least 2 and --steps at least 1")
    per_case = args.schedules // len(CASES)
    env = {**os.environ, "LULL_HYPOTHESIS_EXAMPLES": str(per_case), "LULL_HYPOTHESIS_STEPS": str(args.steps)}
    started = time.monotonic()
    procs = {
        case: subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"tests/test_ladder_properties.py::{case}"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        for case in CASES
    }
    failed = False
    for case, proc in procs.items():
        output, _ = proc.communicate()
        elapsed = time.monotonic() - started
        verdict = "PASS" if proc.returncode == 0 else "FAIL"
        failed |= proc.returncode != 0
        print(f"{case}: {per_case} schedules x {args.steps} steps: {verdict} ({elapsed:.0f} s)")
        if proc.returncode != 0:
            print(output)
    print(f"{per_case * len(CASES)} schedules in {time.monotonic() - started:.0f} s: {'FAIL' if failed else 'PASS'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
