"""Simulated caller populations (`lull corpus simulate`) and how long callers take
(`lull sessions timing`): a population with known answer times is simulated as real
journals on disk, and the timing report recovers its medians."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from console.cli import app
from sessions.flowfiles import load_flow
from sessions.population import Duration, Population
from sessions.simulate import simulate_call, simulation_header
from sessions.timing import Samples, journal_timing, summary

runner = CliRunner()
YARDSTICK = Path(__file__).parent / "flows" / "yardstick"


def _lull(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def _population(tmp_path: Path, **fields) -> Path:
    path = tmp_path / "population.json"
    path.write_text(json.dumps({"schema": 1, "name": "known", **fields}), encoding="utf-8")
    return path


def _timing(corpus: Path) -> dict:
    result = _lull("sessions", "timing", str(corpus), "--json")
    assert result.exit_code == 0, result.output
    return {q["question"]: q for q in json.loads(result.output)["questions"]}


def test_kaplan_meier_counts_cut_off_callers_as_slower_not_as_absent():
    plain = Samples(spoke=[1000.0, 2000.0, 3000.0, 4000.0])
    assert plain.quantile(0.5) == 2000.0 and plain.quantile(1.0) == 4000.0
    # two callers cut off at 2.5 s: dropping them would give a median of 2 s; they were
    # still silent at 2.5 s, so half the callers speak only by 4 s
    cut = Samples(spoke=[1000.0, 2000.0, 3000.0, 4000.0], censored=[2500.0, 2500.0])
    assert cut.quantile(0.5) == 3000.0
    assert cut.survival()(2500.0) == pytest.approx(4 / 6)
    assert cut.quantile(0.99) == 4000.0
    # nobody past the last cut-off: the corpus cannot say when the last share speaks
    assert Samples(spoke=[1000.0], censored=[5000.0, 5000.0]).quantile(0.9) is None


def test_timing_recovers_the_populations_medians_within_five_percent(tmp_path):
    # a flow of the team's own (a number to decide, then a yes/no), and callers who ask
    # for time, go off topic and hang up: the first speech still comes at the drawn time
    flow = YARDSTICK / "loan_repayment.json"
    population = _population(
        tmp_path,
        questions={"ask_months": {"median_ms": 2400, "sigma": 0.5}},
        answer_time={"yes_no": {"median_ms": 1100, "sigma": 0.4}},
        hang_up=0.08, hang_up_after={"median_ms": 4000, "sigma": 0.8},
    )
    corpus = tmp_path / "calls"
    result = _lull("corpus", "simulate", str(corpus), "--flow", str(flow), "--calls", "1200", "--seed", "11",
                   "--population", str(population), "--workers", "2")
    assert result.exit_code == 0, result.output
    assert len(list(corpus.glob("call-*/journal.jsonl"))) == 1200
    spec = load_flow(str(flow)).spec
    asks = [s.id for s in spec.stages if s.collect]
    assert asks[0] == "ask_months", asks  # the override above is keyed by this stage
    timing = _timing(corpus)
    months, confirm = timing["ask_months"], timing[asks[1]]
    assert months["censored"] > 20  # the hang-ups were cut off, and counted as such
    assert months["p50_ms"] == pytest.approx(2400, rel=0.05)
    assert confirm["p50_ms"] == pytest.approx(1100, rel=0.05)
    # the whole log-normal, not only its middle: p90 = median * exp(1.2816 sigma)
    assert months["p90_ms"] == pytest.approx(2400 * 1.897, rel=0.08)


def test_the_same_seed_makes_the_same_calls_in_one_process_or_two(tmp_path):
    def lines(folder: Path) -> list[str]:
        out = []
        for journal in sorted(folder.glob("call-*/journal.jsonl")):
            # the wall clock of the writing is the only thing allowed to differ
            out += [re.sub(r'"(created|wall)":\s*"[^"]*"', "", line) for line in journal.read_text().splitlines()]
        return out

    one, two = tmp_path / "one", tmp_path / "two"
    assert _lull("corpus", "simulate", str(one), "--calls", "40", "--seed", "5", "--workers", "1").exit_code == 0
    assert _lull("corpus", "simulate", str(two), "--calls", "40", "--seed", "5", "--workers", "2").exit_code == 0
    assert lines(one) == lines(two)
    other = tmp_path / "other"
    assert _lull("corpus", "simulate", str(other), "--calls", "40", "--seed", "6", "--workers", "1").exit_code == 0
    assert lines(other) != lines(one)


def test_simulated_journals_replay_clean_and_never_hold_the_callers_code(tmp_path):
    flow = load_flow("reference_code")
    population = Population(mishearing=0.2, partial_answer=0.3, asks_for_time=0.3, media_fault=0.2)
    folders = []
    for index in range(25):
        caller = simulate_call(flow, population, 2, index)
        folder = tmp_path / f"call-{index}"
        caller.call.write_journal(folder, simulation_header(flow, 2, index, population), redact=caller.runtime.redact)
        folders.append(folder)
        # every string written (times are numbers, and a code's digits may occur in them)
        text = "\n".join(_strings([json.loads(line) for line in (folder / "journal.jsonl").read_text().splitlines()]))
        code = caller.truth.get("reference_code")
        if code:
            words = " ".join(("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")[int(d)] for d in code)
            for form in (code, " ".join(code), words):
                assert form not in text, (index, form)
    result = _lull("sessions", "replay", *map(str, folders))
    assert result.exit_code == 0, result.output
    assert result.output.count("CLEAN") >= 25


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        # the wall clock's digits are a time, not something said (a 4-digit code can
        # occur in the microseconds by chance)
        return [s for k, v in value.items() if k not in ("wall", "created") for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_a_caller_population_behaves_as_drawn():
    flow = load_flow("reference_code")
    silent = Population(silent=1.0)
    caller = simulate_call(flow, silent, 0, 0)
    said = [e for _, e in caller.call.inputs if e.kind == "caller_utterance"]
    assert said == [] and caller.runtime.ladder.outcome == "closed_incomplete"
    waiting = Population(asks_for_time=1.0, says_ready=0.0, hang_up=0, mishearing=0, partial_answer=0, off_topic=0,
                         media_fault=0, tool_failure=0, hold=Duration(median_ms=20_000, sigma=0))
    caller = simulate_call(flow, waiting, 0, 1)
    texts = [e.text for _, e in caller.call.inputs if e.kind == "caller_utterance"]
    intents = [e.intent for _, e in caller.call.inputs if e.kind == "caller_utterance"]
    assert intents[0] == "wait_request", texts
    assert caller.runtime.state.get("reference_code") == caller.truth["reference_code"]
    assert caller.runtime.ladder.outcome == "completed"


def test_timing_reports_early_reminders_closes_after_speech_and_holds(tmp_path):
    flow = load_flow("reference_code")
    # everyone asks for time and is gone past the hold; answers come late, after reminders
    population = Population(asks_for_time=1.0, says_ready=0.0, hold=Duration(median_ms=40_000, sigma=0.2),
                            answer_time={"digits": Duration(median_ms=9000, sigma=0.3), "yes_no": Duration(median_ms=900)})
    for index in range(30):
        caller = simulate_call(flow, population, 4, index)
        caller.call.write_journal(tmp_path / f"call-{index}", simulation_header(flow, 4, index, population),
                                  redact=caller.runtime.redact)
    data = summary(_sum(tmp_path))
    ask = next(q for q in data["questions"] if q["question"] == "ask_code")
    assert ask["reminders"] > 0
    assert 0 < ask["reminders_too_early"] <= ask["reminders"]
    holds = data["holds"]
    assert holds["n"] >= 25 and holds["past_hold_ms"] > 0 and holds["hold_ms"] == flow.ladder.hold_ms
    stage_names = [s["stage"] for s in ask["stages"]]
    assert stage_names == [s.name for s in flow.ladder.stages]
    assert ask["suggestion"]["current_wait_ms"] == flow.ladder.stages[0].wait_ms


def _sum(root: Path):
    from sessions.timing import TimingPart

    total = TimingPart()
    for folder in sorted(root.glob("call-*")):
        total.add(journal_timing(folder))
    return total


def test_a_damaged_journal_is_named_and_the_rest_still_counts(tmp_path):
    flow = load_flow("reference_code")
    corpus = tmp_path / "calls"
    for index in range(3):
        caller = simulate_call(flow, Population(), 8, index)
        caller.call.write_journal(corpus / f"call-{index}", simulation_header(flow, 8, index, Population()),
                                  redact=caller.runtime.redact)
    (corpus / "call-1" / "journal.jsonl").write_text("not a journal\n")
    journal = corpus / "call-2" / "journal.jsonl"
    lines = journal.read_text().splitlines()
    journal.write_text("\n".join(lines[: len(lines) // 2]) + "\n{broken")
    result = _lull("sessions", "timing", str(corpus), "--json")
    # a verdict on less than the whole corpus: exit 3, each journal named with why
    assert result.exit_code == 3, result.output
    data = json.loads(result.stdout)
    assert data["sessions"] == 2 and data["verdict"] == {"sessions": 2, "of": 3, "of_at_least": False, "whole": False}
    [unread] = data["unreadable"]
    assert unread["journal"].endswith("call-1") and unread["reason"].startswith("line 1: invalid JSON")
    [part] = data["read_in_part"]  # counted up to its damage
    assert part["journal"].endswith("call-2") and "truncated final line" in part["reason"]


def test_bad_input_gets_one_line_and_nothing_is_overwritten(tmp_path):
    bad = tmp_path / "population.json"
    bad.write_text('{"schema": 1, "asks_for_time": 2}')
    result = runner.invoke(app, ["corpus", "simulate", str(tmp_path / "new"), "--population", str(bad)])
    assert result.exit_code == 2
    assert "asks_for_time" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "new").exists()
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "mine.txt").write_text("keep")
    result = runner.invoke(app, ["corpus", "simulate", str(taken), "--calls", "2"])
    assert result.exit_code == 2 and "not an empty folder" in result.output
    assert (taken / "mine.txt").read_text() == "keep" and len(list(taken.iterdir())) == 1
    result = runner.invoke(app, ["sessions", "timing", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "no such" in result.output


def test_population_defaults_are_plausible_and_documented():
    population = Population()
    rng = random.Random(0)
    draws = sorted(population.response("any", "yes_no").sample(rng) for _ in range(2001))
    assert 700 < draws[1000] < 1100  # about a second to say yes or no
    assert population.response("any", "digits").median_ms > population.response("any", "number").median_ms
    import sessions.population as module

    assert "Stivers" in module.__doc__ and "assumption" in module.__doc__


def test_timing_of_one_flow_names_the_journals_of_others(tmp_path):
    corpus = tmp_path / "mixed"
    for flow_ref, seed in (("reference_code", 1), (str(YARDSTICK / "clinic_checkin.json"), 2)):
        flow = load_flow(flow_ref)
        for index in range(3):
            caller = simulate_call(flow, Population(), seed, index)
            caller.call.write_journal(corpus / f"{flow.spec.name}-{index}", simulation_header(flow, seed, index, Population()),
                                      redact=caller.runtime.redact)
    result = _lull("sessions", "timing", str(corpus), "--json", "--flow", str(YARDSTICK / "clinic_checkin.json"))
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["sessions"] == 3 and data["flows"] == ["clinic_checkin"]
    assert len(data["other_flow"]) == 3 and all("reference_code" in o for o in data["other_flow"])
    assert {q["question"] for q in data["questions"]} == {s.id for s in load_flow(str(YARDSTICK / "clinic_checkin.json")).spec.stages if s.collect}
    result = runner.invoke(app, ["sessions", "timing", str(corpus), "--flow", str(YARDSTICK / "water_account.json")])
    assert result.exit_code == 1 and "no journal of flow water_account" in result.output


def test_the_overview_reads_once_what_timing_and_coverage_read_apart(tmp_path):
    """The corpus screen's one pass: the same figures as the two readers, one progress."""
    from sessions.coverage import coverage
    from sessions.overview import corpus_overview
    from sessions.population import Population
    from sessions.simulate import simulate_corpus
    from sessions.timing import corpus_timing, summary

    root = tmp_path / "calls"
    simulate_corpus(root, "reference_code", None, 30, 5, Population(), workers=1)
    (root / "damaged").mkdir()
    (root / "damaged" / "journal.jsonl").write_text('{"type": "header"\n')
    counts: list[int] = []
    overview = corpus_overview([root], workers=1, progress=counts.append)
    assert summary(overview.timing) == summary(corpus_timing([root], workers=1))
    assert overview.coverage.to_dict() == coverage([root], workers=1).to_dict()
    assert overview.timing.unreadable and overview.coverage.unreadable  # the damaged one, named by both
    assert counts[-1] == 31


def test_a_suggested_wait_says_sooner_or_later_never_a_negative_wait():
    from console.cli.sessions import _silent_wait

    assert _silent_wait(-3500) == "a silent caller hears the next stage 3.5s sooner"
    assert _silent_wait(2000) == "a silent caller hears the next stage 2.0s later"
    assert "-" not in _silent_wait(-10)


def test_a_percentile_the_corpus_never_reaches_is_a_dash_with_its_reason(tmp_path):
    """A fifth of callers hang up silent: the time by which 99 % have spoken is never seen.
    The table shows "-", and one line says why, rather than leaving a designer to guess;
    where every row with callers in it has its percentiles, the line is not printed."""

    def dashes(corpus: Path) -> bool:
        rows = [row for q in _timing(corpus).values() for row in (q, *q["stages"]) if row.get("n")]
        return any(row[k] is None for row in rows for k in ("p50_ms", "p90_ms", "p99_ms"))

    legend = 'p50/p90/p99 "-": fewer callers than that spoke before the rest were cut off'
    population = _population(tmp_path, silent=0.2, hang_up=0.0)
    corpus = tmp_path / "calls"
    assert _lull("corpus", "simulate", str(corpus), "--calls", "60", "--seed", "3", "--workers", "1",
                 "--population", str(population)).exit_code == 0
    ask = _timing(corpus)["ask_code"]
    assert ask["n"] > 0 and ask["p50_ms"] is not None and ask["p99_ms"] is None
    assert legend in " ".join(_lull("sessions", "timing", str(corpus)).output.split())

    prompt = tmp_path / "prompt"
    prompt.mkdir()
    everyone = _population(prompt, silent=0.0, hang_up=0.0, media_fault=0.0, asks_for_time=0.0, off_topic=0.0,
                           mishearing=0.0, partial_answer=0.0, tool_failure=0.0,
                           answer_time={"digits": {"median_ms": 1500, "sigma": 0.2}, "yes_no": {"median_ms": 600, "sigma": 0.2}})
    answered = tmp_path / "answered"
    assert _lull("corpus", "simulate", str(answered), "--calls", "20", "--seed", "3", "--workers", "1",
                 "--population", str(everyone)).exit_code == 0
    assert not dashes(answered)
    assert legend not in " ".join(_lull("sessions", "timing", str(answered)).output.split())
