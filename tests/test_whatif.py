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
