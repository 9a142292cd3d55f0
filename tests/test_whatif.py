"""What an edit would change over a corpus (`lull sessions replay CORPUS --summary`):
simulated journals replayed under an edited flow and policy, before and after with
denominators and 95 % intervals; sessions that cannot be replayed are named."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from console.cli import app
from sessions.flowfiles import load_flow
from sessions.population import Population
from sessions.simulate import simulate_corpus
from sessions.whatif import Edit, corpus_whatif, median_interval, summary, wilson

runner = CliRunner()
YARDSTICK = Path(__file__).parent / "flows" / "yardstick"
FLOW = YARDSTICK / "loan_repayment.json"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("whatif") / "calls"
    simulate_corpus(out, str(FLOW), None, 80, 7, Population(), workers=1)
    return out


def _edited(tmp_path: Path, first_wait_ms: float) -> Path:
    document = json.loads(FLOW.read_text(encoding="utf-8"))
    # the flow leaves its ladder to the defaults: written out, with the first wait edited
    stages = load_flow(str(FLOW)).ladder.model_dump(mode="json")["stages"]
    stages[0]["wait_ms"] = first_wait_ms
    document["ladder"] = {**document.get("ladder", {}), "stages": stages}
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_intervals_match_known_values():
    # no successes in 10: Wilson's upper bound is z^2 / (n + z^2)
    low, high = wilson(0, 10)
    assert low == 0.0 and high == pytest.approx(3.8415 / 13.8415, abs=1e-4)
    low, high = wilson(50, 100)
    assert (low, high) == (pytest.approx(0.4038, abs=1e-4), pytest.approx(0.5962, abs=1e-4))
    # one value repeated: the median and both bounds are that value's bin
    middle, interval, n = median_interval(Counter({150: 11}))
    assert (middle, interval, n) == (1505.0, (1505.0, 1505.0), 11)
    # 1..99 (one a bin): median 50, interval the binomial ranks around it
    middle, (low, high), n = median_interval(Counter(range(1, 100)))
    assert n == 99 and middle == 505.0 and 390 < low < 500 and 510 < high < 620


def test_the_recorded_flow_replayed_changes_nothing(corpus):
    # the unedited flow on its own inputs: a faithful paired run, every change exactly 0
    data = summary(corpus_whatif([corpus], Edit(), workers=1))
    assert data["sessions"] == 80 and not data["not_replayed"] and not data["other_flow"]
    for figure in ("reminders_per_session", "sessions_closed", "interruptions_per_session"):
        row = data[figure]
        assert row["before"] == row["after"] and row["change"] == 0, figure
    assert data["interruptions_per_session"]["before"] > 0, "the population interrupts the agent"
    assert data["time_to_answer"]["before"] == data["time_to_answer"]["after"]
    for label, row in data["episode_outcomes"].items():
        assert row["change"] == 0, label


def test_a_shorter_first_wait_adds_reminders_with_an_interval_above_zero(corpus, tmp_path):
    edited = _edited(tmp_path, 2000)
    result = runner.invoke(app, ["sessions", "replay", str(corpus), "--flow", str(edited), "--summary", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    reminders = data["reminders_per_session"]
    assert reminders["n"] == 80 and reminders["after"] > reminders["before"]
    assert reminders["change_ci"][0] > 0, "80 paired sessions are enough to see it"
    closed = data["sessions_closed"]
    assert closed["n"] == 80 and 0 <= closed["before_ci"][0] <= closed["before_share"] <= closed["before_ci"][1]
    # the same split over two processes: the same figures
    again = summary(corpus_whatif([corpus], Edit(flow_document=json.loads(edited.read_text())), workers=2))
    assert again == data
    # the text names both sides, denominators and intervals
    text = runner.invoke(app, ["sessions", "replay", str(corpus), "--flow", str(edited), "--summary"]).output
    flat = " ".join(text.split())
    assert "reminders a session" in flat and "before" in flat and "after" in flat and "[+" in flat


def test_a_ladder_policy_replaces_the_flows_default_ladder(corpus, tmp_path):
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"stages": [
        {"name": "quiet_wait", "wait_ms": 1500},
        {"name": "safe_close", "wait_ms": 1000, "closes": True, "prompt": "I'll end the call here."},
    ]}), encoding="utf-8")
    result = runner.invoke(app, ["sessions", "replay", str(corpus), "--policy", str(policy), "--summary", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["sessions_closed"]["after"] > data["sessions_closed"]["before"]


def test_sessions_the_edit_cannot_replay_are_named_and_the_verdict_says_so(corpus, tmp_path):
    mixed = tmp_path / "mixed"
    shutil.copytree(corpus, mixed)
    (mixed / "call-0000003" / "journal.jsonl").write_text("not a journal\n", encoding="utf-8")
    other = tmp_path / "other"
    simulate_corpus(other, "reference_code", None, 2, 1, Population(), workers=1)
    shutil.copytree(other / "call-0000000", mixed / "other-flow-call")
    edited = _edited(tmp_path, 3000)
    result = runner.invoke(app, ["sessions", "replay", str(mixed), "--flow", str(edited), "--summary"])
    assert result.exit_code == 3, result.output
    flat = " ".join(result.output.split())
    assert "1 session(s) could not be replayed" in flat and "call-0000003" in flat
    assert "1 journal(s) of another flow" in flat and "other-flow-call" in flat
    assert "verdict on 79 of 81 session(s)" in flat


def test_bad_input_is_one_line(tmp_path):
    result = runner.invoke(app, ["sessions", "replay", str(tmp_path), "--summary"])
    assert result.exit_code == 1 and "no session folders" in result.output
    result = runner.invoke(app, ["sessions", "replay", str(tmp_path), "--json"])
    assert result.exit_code == 2 and "go with --summary" in result.output


def _library_flow():
    from ladder.flow.scaffold import scaffold_flow
    from sessions.flowfiles import check_data

    report = check_data(scaffold_flow("library", "card_no", "digits", 8, 8), "library.json")
    assert report.flow is not None
    return report.flow


# calls of seed 7 on the library flow that each hold a case an unfaithful paired run got
# wrong: a turn starting the very millisecond a prompt ended (207, 1411), a reminder the
# caller cut before it started (207), a prompt queued behind a recovery prompt (1670), a
# redacted read-back (all), a reminder interrupted twice over (669)
_FAITHFUL_CALLS = (207, 669, 1411, 1670, 683, 872)


def test_an_unedited_flow_replays_every_call_as_recorded_even_at_the_edges(tmp_path):
    from sessions.paired import ENDPOINT_KINDS, paired_run
    from sessions.simulate import call_folder, simulate_call, simulation_header
    from sessions.whatif import measure

    flow, population = _library_flow(), Population()
    cases = Counter()
    for index in _FAITHFUL_CALLS:
        caller = simulate_call(flow, population, 7, index)
        folder = call_folder(tmp_path, index)
        caller.call.write_journal(folder, simulation_header(flow, 7, index, population), redact=caller.runtime.redact)
        records = [json.loads(line) for line in (folder / "journal.jsonl").read_text().splitlines()[1:]]
        endpoint_at = None
        started = {r["token"] for r in records if r.get("kind") == "prompt_started"}
        for r in records:
            if r.get("type") == "input" and r["kind"] in ENDPOINT_KINDS:
                endpoint_at = r["t_ms"]
            elif r.get("type") == "input" and r["kind"] == "turn_started" and r["t_ms"] == endpoint_at:
                cases["turn at a prompt's end"] += 1
            elif r.get("effect") == "RequestPrompt" and r["token"] not in started:
                cases["prompt cut before it started"] += 1
            elif r.get("effect") == "RequestPrompt" and "[redacted]" in r["text"]:
                cases["redacted read-back"] += 1
            elif r.get("effect") == "RequestPrompt" and r["kind"] == "channel_recovery":
                cases["prompt queued behind another"] += 1
        run = paired_run(folder, flow=flow)
        before, after = measure(run.recorded), measure(run.produced)
        assert after == before, f"call {index}: {before} -> {after}"
    # the calls must still hold the cases (a changed simulator may not: pick others)
    assert set(cases) == {"turn at a prompt's end", "prompt cut before it started", "redacted read-back",
                          "prompt queued behind another"}, cases


def test_a_damaged_journal_is_named_not_counted_and_a_cut_one_is_not_played_on(tmp_path):
    from sessions.paired import paired_run
    from sessions.simulate import call_folder, simulate_call, simulation_header
    from sessions.whatif import measure, session_whatif

    flow, population = _library_flow(), Population()
    caller = simulate_call(flow, population, 7, 3)
    folder = call_folder(tmp_path, 3)
    caller.call.write_journal(folder, simulation_header(flow, 7, 3, population), redact=caller.runtime.redact)
    lines = (folder / "journal.jsonl").read_text().splitlines(keepends=True)
    # a process killed mid-call: whole lines, no close; the after must not play on to one
    killed = call_folder(tmp_path, 4)
    killed.mkdir()
    (killed / "journal.jsonl").write_text("".join(lines[: len(lines) // 2]))
    run = paired_run(killed, flow=flow)
    assert run.stopped is None and measure(run.recorded) == measure(run.produced)
    assert measure(run.produced).session == "open"
    # a torn last line: replayed up to the damage, named, and not counted
    torn = call_folder(tmp_path, 5)
    torn.mkdir()
    (torn / "journal.jsonl").write_text("".join(lines[: len(lines) // 2]) + lines[len(lines) // 2][:20])
    part = session_whatif(torn, Edit())
    assert part.sessions == 0 and len(part.partly) == 1 and "call-0000005" in part.partly[0].journal
    result = runner.invoke(app, ["sessions", "replay", str(tmp_path), "--summary"])
    flat = " ".join(result.output.split())
    assert result.exit_code == 3, result.output
    assert "1 damaged session(s)" in flat and "call-0000005" in flat and "verdict on 2 of 3 session(s)" in flat
