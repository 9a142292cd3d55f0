"""`lull bench replay|growth`: what sessions cost, measured in one run.

`replay`: replay and paired replay speed, the core's cost per event, and a report over
many recorded sessions, with peak memory.

`growth`: the same work at two sizes (a journal of N and 2N records, a flow of M and
2M stages), so a cost that grows faster than the input shows as a ratio above 2.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path


def run_replay_bench(sessions: int = 10_000) -> dict:
    """Replay speed, the core's cost per event, and a report over many sessions."""
    import os
    import resource
    import shutil

    from ladder import Controller
    from sessions.incidents import library_paths, load_incident, run_incident
    from sessions.metrics import folder_metrics
    from sessions.paired import paired_replay
    from sessions.replay import replay
    from sessions.scenarios import load_scenario, run_scenario

    root = Path(tempfile.mkdtemp(prefix="lull-bench-"))
    try:
        bases = []
        scenario_dir = Path(__file__).resolve().parent.parent / "tests" / "scenarios"
        for path in sorted(scenario_dir.glob("*.json")):
            run_scenario(load_scenario(path), path, record_to=root / "base" / path.stem)
            bases.append(root / "base" / path.stem)
        for path in library_paths():
            run_incident(load_incident(path), record_to=root / "base" / path.stem)
            bases.append(root / "base" / path.stem)

        # replay and paired replay speed, in events (inputs) per second
        started, events = time.perf_counter(), 0
        for _ in range(3):
            for base in bases:
                events += replay(base).inputs
        replay_s = time.perf_counter() - started
        started, paired_events = time.perf_counter(), 0
        for base in bases:
            report = paired_replay(base)
            paired_events += sum(len(d.before.prompts) if d.before else 0 for d in report.episodes) or 1
        paired_s = time.perf_counter() - started
        paired_inputs = sum(replay(b).inputs for b in bases)

        # the ladder core alone: a busy call's worth of events, fed again and again
        from ladder import (
            AskQuestion,
            PlaybackCompleted,
            TurnEnded,
            TurnInterpreted,
            TurnStarted,
        )

        controller, now, fed = Controller(), 0.0, 0
        started = time.perf_counter()
        for i in range(20_000):
            controller = Controller() if i % 2000 == 0 else controller
            now += 50
            kind = i % 5
            if kind == 0:
                effects = controller.handle(AskQuestion("q", "What is your reference code?"), now)
                token = next(e.token for e in effects if hasattr(e, "token") and e.__class__.__name__ == "RequestPrompt")
            elif kind == 1:
                controller.handle(PlaybackCompleted(token), now)
            elif kind == 2:
                controller.handle(TurnStarted(f"t{i}", i), now)
            elif kind == 3:
                controller.handle(TurnEnded(f"t{i}", i), now)
            else:
                controller.handle(TurnInterpreted(f"t{i - 1}", i - 1, "partial_answer"), now)
            fed += 1
        core_us = (time.perf_counter() - started) / fed * 1e6

        # many sessions: hard links to the base journals (no disk), read on every core
        many = root / "many"
        many.mkdir()
        for i in range(sessions):
            folder = many / f"s{i:05d}"
            folder.mkdir()
            os.link(bases[i % len(bases)] / "journal.jsonl", folder / "journal.jsonl")
        started = time.perf_counter()
        metrics = folder_metrics(many)
        report_s = time.perf_counter() - started
        self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        child_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {
        "replay_events_per_s": round(events / replay_s),
        "paired_replay_inputs_per_s": round(paired_inputs / paired_s),
        "core_us_per_event": round(core_us, 1),
        "report_sessions": metrics.sessions,
        "report_s": round(report_s, 2),
        "peak_rss_mb": {"this_process": round(self_kb / 1024), "largest_worker": round(child_kb / 1024)},
        "workers": os.cpu_count(),
        "targets": {
            "report_10000_under_30s": metrics.sessions >= 10_000 and report_s < 30,
            "peak_memory_under_300mb": max(self_kb, child_kb) / 1024 < 300,
        },
    }


# -- growth: does the cost stay linear in the size of the input? ----------------------------

GROWTH_LOOP = ["4 8 2 1", "no"]  # the caller gives a code, then says it was wrong: asked again


def long_session(folder: Path, loops: int) -> int:
    """Record a long simulated call in `folder`; returns how many records its journal holds.

    The bundled reference-code flow with an episode that never times out: the caller
    answers and then denies the code, so the question is asked again, `loops` times.
    """
    import json as _json

    from sessions.flowfiles import library_flow_path
    from sessions.journal import read_journal
    from sessions.scenarios import Scenario, run_scenario

    data = _json.loads(library_flow_path("reference_code").read_text(encoding="utf-8"))
    data.setdefault("ladder", {})["episode_ms"] = 10**9
    steps = [{"say": words} for _ in range(loops) for words in GROWTH_LOOP] + [{"expect": {}}]
    scenario = Scenario.model_validate({"schema": 1, "name": "growth", "title": "a long call", "flow": data, "steps": steps})
    run_scenario(scenario, None, record_to=folder)
    return len(read_journal(folder).records)


def _cpu_seconds(work, min_total_s: float = 0.0, max_runs: int = 1) -> float:
    """CPU time of one run of `work` (repeated, up to max_runs, until min_total_s is spent).

    CPU time of this process, not wall time: other work on a shared machine stretches
    wall time unevenly between the two sizes and would fake a growth ratio.
    """
    runs, started = 0, time.process_time()
    while True:
        work()
        runs += 1
        spent = time.process_time() - started
        if runs >= max_runs or spent >= min_total_s:
            return spent / runs


def _growth(name: str, unit: str, small: int, large: int, small_s: float, large_s: float) -> dict:
    return {
        "what": name,
        "unit": unit,
        "sizes": [small, large],
        "seconds": [round(small_s, 4), round(large_s, 4)],
        "size_ratio": round(large / small, 2),
        "time_ratio": round(large_s / small_s, 2) if small_s > 0 else None,
    }


def run_growth_bench(records: int = 20_000, stages: int = 500) -> dict:
    """Export and replay at N and 2N journal records, flow compilation at M and 2M stages
    (the compiler's synthetic flows, as a chain and as a fan-out).

    Each figure is the CPU time at both sizes and their ratio: about 2.0 when the cost
    grows linearly with the size, about 4.0 when it grows with its square.
    """
    import shutil

    from ladder.flow.compile import synthetic_flow
    from sessions.export import export_incident, export_scenario
    from sessions.flowfiles import check_data
    from sessions.replay import replay

    loops = max(2, round(records / 70))  # about 70 records per loop of the call
    root = Path(tempfile.mkdtemp(prefix="lull-growth-"))
    rows = []
    try:
        sizes, timings = [], {"record": [], "export_incident": [], "export_scenario": [], "replay": []}
        for n, count in enumerate((loops, 2 * loops)):
            folder = root / f"call{n}"
            started = time.process_time()
            sizes.append(long_session(folder, count))
            timings["record"].append(time.process_time() - started)
            timings["export_incident"].append(_cpu_seconds(lambda: export_incident(folder, "growth")))
            timings["export_scenario"].append(_cpu_seconds(lambda: export_scenario(folder, "growth")))
            timings["replay"].append(_cpu_seconds(lambda: replay(folder)))
        labels = {
            "record": "simulate and record the call",
            "export_incident": "sessions export --as incident",
            "export_scenario": "sessions export --as scenario",
            "replay": "sessions replay",
        }
        for key, label in labels.items():
            rows.append(_growth(label, "journal records", sizes[0], sizes[1], *timings[key]))
    finally:
        shutil.rmtree(root, ignore_errors=True)

    for shape in ("chain", "fanout"):  # questions one after another; all at once
        compile_s = []
        for count in (stages, 2 * stages):
            document = synthetic_flow(count, shape)
            report = check_data(document, f"growth flow ({shape})")
            if report.flow is None:
                raise RuntimeError(f"the {shape} growth flow does not compile: {report.errors[0].line()}")
            # one compile is quick: repeated until the figure is worth comparing
            compile_s.append(_cpu_seconds(lambda doc=document: check_data(doc, "growth flow"), min_total_s=0.3, max_runs=50))
        rows.append(_growth(f"flow check and compile ({shape})", "stages", stages, 2 * stages, *compile_s))
    return {"rows": rows, "linear_ratio": 2.0}


__all__ = ["long_session", "run_growth_bench", "run_replay_bench"]
