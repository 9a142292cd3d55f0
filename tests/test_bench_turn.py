"""`lull bench turn` on a short call with the real models: every caller turn is answered
once, each perceived gap belongs to the turn it measures, and the figures are there."""

from voices.turn_bench import CALLER, HOLD_MS, run_turn_bench


def test_three_turns_an_answer_words_that_fill_nothing_and_an_answer():
    assert [kind for _, kind in CALLER[:3]] == ["answer", "other", "answer"]
    result = run_turn_bench(3, echo=False)
    assert result["targets"]["every_turn_answered_once"], result
    assert result["kind"] == ["answer", "other", "answer"]
    gaps = result["perceived_gap_ms"]
    assert len(gaps) == 3 and all(g is not None and 0 < g < 5000 for g in gaps), gaps
    # the words that fill nothing waited out the stage's whole hold; a code need not
    assert result["end_of_turn"][1] == "hold"
    assert result["stages_ms"]["hold_ms"]["n"] == 3
    assert result["perceived_gap_by_kind_ms"]["other"]["max"] >= HOLD_MS
    for row in result["whisper_options"].values():
        assert row["of"] == 3 and row["median_ms"] > 0
