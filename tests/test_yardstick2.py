"""The README's figures for yardstick2 (eight flows, and sealed phrasings written by
writers who read no code and no phrasing here) are what the bench measures: as text,
spoken and down a phone line, each spoken turn re-read from what Lull's whisper heard of
it when the bench ran (tests/flows/yardstick2/heard/; no recogniser runs here), so the
table cannot go stale and a change to the reader shows in it."""

from __future__ import annotations

from pathlib import Path

import pytest

from voices.understanding.heard_phrasings import heard_yardstick
from voices.line.pstn import LineSettings

ROOT = Path(__file__).resolve().parents[1]
YARDSTICK2 = ROOT / "tests" / "flows" / "yardstick2"
CONDITIONS = ("text", "spoken", "line")


def _share(row: dict, digits: int = 0) -> str:
    return f"{row['right']}/{row['total']} ({100 * row['right'] / row['total']:.{digits}f} %)"


def _readme_rows() -> dict[str, list[str]]:
    text = (ROOT / "README.md").read_text()
    block = text.split("<!-- yardstick2 -->", 1)[1].split("<!-- /yardstick2 -->", 1)[0]
    rows = {}
    for line in block.strip().splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


@pytest.fixture(scope="module")
def measured() -> dict:
    return heard_yardstick(YARDSTICK2, spoken=True, line=LineSettings(), cached_only=True)


def test_the_readme_figures_and_targets_are_the_benchs_read_from_what_was_heard(measured):
    rows = _readme_rows()
    assert set(rows) == {*measured["flows"], "all eight"}
    for flow, per_set in measured["flows"].items():
        sealed = per_set["sealed"]
        cells = [_share(sealed[c]["pooled"]) for c in CONDITIONS]
        cells.append(" / ".join(f"{sealed[c]['off_topic']['accepted']}/{sealed[c]['off_topic']['total']}" for c in CONDITIONS))
        assert rows[flow] == cells, flow
    pooled = measured["sets"]["sealed"]
    cells = [_share(pooled[c]["pooled"], 1) for c in CONDITIONS]
    cells.append(" / ".join(f"{pooled[c]['off_topic']['accepted']}/{pooled[c]['off_topic']['total']}" for c in CONDITIONS))
    assert rows["all eight"] == cells
    said = " ".join((ROOT / "README.md").read_text().split("<!-- /yardstick2 -->", 1)[1].split("\n\n", 2)[1].split())
    for condition in CONDITIONS:
        for target, met in pooled[condition]["targets"].items():
            if "ms a turn" in target:
                continue  # a speed, the bench's to measure (a loaded machine is slower), not this test's
            assert f"{condition}: {target}: {'MET' if met else 'MISSED'}" in said, (condition, target)


def test_the_readme_figures_for_each_kind_of_voice_are_the_benchs(measured):
    # which voices whisper fails: the README's rows are the bench's, pooled by engine
    text = (ROOT / "README.md").read_text()
    block = text.split("<!-- yardstick2 voices -->", 1)[1].split("<!-- /yardstick2 voices -->", 1)[0]
    rows = {}
    for line in block.strip().splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows[cells[0].split(",")[0]] = cells[1:]
    sealed = measured["sets"]["sealed"]
    for engine, name in (("piper", "piper"), ("espeak", "espeak-ng")):
        cells = []
        for condition in ("spoken", "line"):
            v = sealed[condition]["voices"][f"all {engine}"]
            cells += [_share(v), f"{v['word_error']:.2f}"]
        assert rows[name] == cells, engine
    # each engine's rows pool its voices, and the voices pool to the condition's figure
    for condition in ("spoken", "line"):
        voices = sealed[condition]["voices"]
        engines = [v for n, v in voices.items() if n.startswith("all ")]
        singles = [v for n, v in voices.items() if not n.startswith("all ")]
        for field in ("right", "total", "off_topic_accepted"):
            assert sum(v[field] for v in engines) == sum(v[field] for v in singles)
        assert sum(v["right"] for v in singles) == sealed[condition]["pooled"]["right"]
        assert sum(v["off_topic_accepted"] for v in singles) == sealed[condition]["off_topic"]["accepted"]
