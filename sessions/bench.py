"""`lull bench replay|core|growth`: what sessions and their core cost, measured in one run.

`replay`: replay and paired replay speed, the core's cost per event, and a report over
many recorded sessions, with peak memory.

`core`: the ladder core's cost per event on a pseudo-random call schedule, beside seed
000's reference ladder (sessions.seed_ladder) on the same schedule, and their ratio.

`corpus`: journals a second on one core for `sessions timing` and for replay, beside
merely reading and parsing the same journals, over session folders and archives.

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



# -- core: the ladder's cost per event beside seed 000's reference ladder ------------------

# what the caller does when a question is pending, and how often
_CORE_INTENTS = (("answer", 35), ("wait_request", 15), ("ready", 10), ("backchannel", 15),
                 ("repeat_request", 10), ("partial_answer", 15))


def core_schedule(events: int, seed: int = 0) -> list[tuple[str, float, str | None]]:
    """A pseudo-random call schedule of `events` steps: (what, ms since the last step, intent).

    A question is asked and played; then the caller is silent (the next timer fires, and
    its reminder plays) or takes a turn (started, ended, interpreted). An answer, or a
    closed ladder, brings the next question.
    """
    import random

    rng = random.Random(seed)
    names = [name for name, _ in _CORE_INTENTS]
    weights = [w for _, w in _CORE_INTENTS]
    out: list[tuple[str, float, str | None]] = []
    while len(out) < events:
        out += [("ask", 10.0, None), ("started", 20.0, None), ("completed", 1500.0, None)]
        for _ in range(rng.randint(1, 6)):
            if rng.random() < 0.4:
                out += [("timer", 0.0, None), ("started", 20.0, None), ("completed", 1200.0, None)]
                continue
            intent = rng.choices(names, weights)[0]
            out += [("turn_started", rng.uniform(200, 3000), None), ("turn_ended", rng.uniform(300, 1500), None),
                    ("interpreted", 150.0, intent)]
            if intent == "answer":
                break
    return out[:events]


def _drive_core(schedule, observe=None) -> int:
    """The schedule through `ladder.Controller`; returns the events fed. `observe`, if
    given, is called with the controller and each step's effects (tests read them)."""
    from ladder import (
        AskQuestion,
        Controller,
        PlaybackCompleted,
        PlaybackStarted,
        RequestPrompt,
        TurnEnded,
        TurnInterpreted,
        TurnStarted,
    )

    core, now, token, turn, fed = Controller(), 0.0, 0, 0, 0
    for what, dt, intent in schedule:
        now += dt
        if what == "ask":
            if core.state.value == "closed":
                core = Controller()
            effects = core.handle(AskQuestion("q", "What is your reference code?"), now)
        elif what == "started":
            effects = core.handle(PlaybackStarted(token), now)
        elif what == "completed":
            effects = core.handle(PlaybackCompleted(token), now)
        elif what == "timer":
            due = core.next_deadline()
            if due is not None and due > now:
                now = due
            effects = core.handle_timer(now)
        elif what == "turn_started":
            turn += 1
            effects = core.handle(TurnStarted(f"t{turn}", turn), now)
        elif what == "turn_ended":
            effects = core.handle(TurnEnded(f"t{turn}", turn), now)
        else:
            effects = core.handle(TurnInterpreted(f"t{turn}", turn, intent), now)  # type: ignore[arg-type]
        for effect in effects:
            if type(effect) is RequestPrompt:
                token = effect.token
        if observe is not None:
            observe(core, effects)
        fed += 1
    return fed


def _drive_reference(schedule) -> int:
    """The same schedule through seed 000's ladder, each step its nearest operation."""
    from .seed_ladder import Ladder

    ladder, now, timer, fed = Ladder(10**12), 0.0, None, 0
    wait = 8000
    for what, dt, intent in schedule:
        now += dt
        if what == "ask":
            ladder, timer = Ladder(now + 120_000), None
        elif what == "started":
            ladder.playback_complete(-1)  # a callback that is not the prompt's: checked, ignored
        elif what == "completed":
            ladder.playback_complete(ladder.prompt_token)
            if ladder.state == "collecting" and ladder.current is None:
                timer = ladder.arm(now, wait)
        elif what == "timer":
            if timer is not None:
                now = max(now, timer.due)
                ladder.fire(timer, now)
        elif what == "turn_started":
            ladder.speech()
        elif what == "turn_ended":
            ladder.expire(now)
        elif intent == "wait_request":
            ladder.hold()
        else:
            ladder.resume()
            if ladder.state == "collecting":
                timer = ladder.arm(now, wait)
        fed += 1
    return fed


def run_core_bench(events: int = 100_000, rounds: int = 5, seed: int = 0) -> dict:
    """The core and the reference ladder on the same schedule, in one run, interleaved
    round by round so a noisy machine weighs on both alike; the best round of each."""
    schedule = core_schedule(events, seed)
    best = {"core": float("inf"), "reference": float("inf")}
    for _ in range(rounds):
        for name, drive in (("core", _drive_core), ("reference", _drive_reference)):
            started = time.perf_counter()
            fed = drive(schedule)
            best[name] = min(best[name], time.perf_counter() - started)
    rate = {name: fed / seconds for name, seconds in best.items()}
    return {
        "events": fed,
        "rounds": rounds,
        "core_events_per_s": round(rate["core"]),
        "reference_events_per_s": round(rate["reference"]),
        "core_us_per_event": round(best["core"] / fed * 1e6, 2),
        "reference_us_per_event": round(best["reference"] / fed * 1e6, 3),
        "ratio": round(rate["reference"] / rate["core"], 1),
        "target_ratio": 8.0,
    }


def _read_only(journal) -> int:
    from .journal import JournalScan, iter_records

    n = 0
    for _ in iter_records(journal, JournalScan()):
        n += 1
    return n


def _replay_clean(journal) -> bool:
    from .replay import replay

    return replay(journal).verdict == "CLEAN"


def run_corpus_bench(calls: int = 2000, corpus: Path | None = None, seed: int = 0) -> dict:
    """Per core, in one run: reading and parsing, timing and replay, over the same journals.

    Without `corpus`, `calls` simulated calls of the shipped flow are written twice,
    as session folders and as .jsonl.zst archives; each reader runs in this process
    (one core) over each form, rounds interleaved, the best of two counting.
    """
    import shutil

    from .archive import is_archive, members
    from .corpus import corpus_units
    from .flowfiles import DEFAULT_FLOW
    from .population import Population
    from .simulate import simulate_corpus
    from .timing import journal_timing

    made = None
    forms: dict[str, Path] = {}
    if corpus is None:
        made = Path(tempfile.mkdtemp(prefix="lull-bench-corpus-"))
        simulate_corpus(made / "folders", DEFAULT_FLOW, None, calls, seed, Population())
        simulate_corpus(made / "archives", DEFAULT_FLOW, None, calls, seed, Population(), archive="zst")
        forms = {"folders": made / "folders", "archives": made / "archives"}
    else:
        forms = {corpus.name: corpus}
    try:
        def journals(root: Path):
            for unit in corpus_units([root]):
                if is_archive(unit):
                    yield from members(unit, [])
                else:
                    yield unit

        work = {"read and parse": _read_only, "timing": journal_timing, "replay": _replay_clean}
        best: dict[tuple[str, str], float] = {}
        count: dict[str, int] = {}
        for _ in range(2):
            for form, root in forms.items():
                for name, read in work.items():
                    started = time.perf_counter()
                    n = 0
                    for journal in journals(root):
                        read(journal)
                        n += 1
                    elapsed = time.perf_counter() - started
                    best[(form, name)] = min(best.get((form, name), float("inf")), elapsed)
                    count[form] = n
        size = {form: sum(f.stat().st_size for f in root.rglob("*") if f.is_file()) for form, root in forms.items()}
        rows = []
        for form in forms:
            parse = best[(form, "read and parse")]
            for name in work:
                seconds = best[(form, name)]
                rows.append({"form": form, "work": name, "journals": count[form],
                             "journals_per_s_per_core": round(count[form] / seconds, 1),
                             "times_read_and_parse": round(seconds / parse, 2)})
        return {"calls": count, "bytes": size, "rows": rows}
    finally:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)


__all__ = ["core_schedule", "long_session", "run_core_bench", "run_corpus_bench", "run_growth_bench", "run_replay_bench"]
