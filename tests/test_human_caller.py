"""`lull bench turn --caller human`: the human caller's turns are built from the committed
recordings (voices/human_speech), the same every time, in the synthetic caller's shape:
codes of the digits one to five each said by one speaker, natural gaps between the
words, one code in two parts, and phrases that fill nothing."""

from __future__ import annotations

import json

import numpy as np
import soundfile

from ladder.flow.understanding.text import digit_answer_evidence, parse_digits
from voices.human_speech import HERE, material
from voices.turn_bench import CALLER, HUMAN_CALLER, HUMAN_GAP_S, _flow, human_turns


def test_the_committed_recordings_are_what_material_json_says():
    listed = material()["files"]
    assert set(listed) == {p.name for p in HERE.glob("*.wav")}
    assert sum((HERE / name).stat().st_size for name in listed) < 400_000
    for name, spec in listed.items():
        audio, rate = soundfile.read(HERE / name, dtype="float32")
        assert rate == 16_000 and audio.ndim == 1, name
        assert abs(audio.size / rate - spec["seconds"]) < 1e-3, name
        start, end = spec["words_s"]
        assert start == 0.1 and abs(audio.size / rate - end - 0.1) < 1e-3, name
        assert spec["archive"] in material()["archives"] and spec["transcript"], name
    assert json.loads((HERE / "material.json").read_text())["rate"] == 16_000


def test_the_human_callers_turns_are_built_the_same_from_the_recordings():
    turns, again = human_turns(), human_turns()
    assert [kind for _, kind in HUMAN_CALLER] == [kind for _, kind in CALLER]  # the same 8-turn shape
    assert len(turns) == len(HUMAN_CALLER) == 8
    for turn, same in zip(turns, again, strict=True):
        assert np.array_equal(turn["audio"], same["audio"]) and turn["gaps_s"] == same["gaps_s"]
    pauses = 0
    rate = material()["rate"]
    for turn, ((speaker, *parts), kind) in zip(turns, HUMAN_CALLER, strict=True):
        assert turn["kind"] == kind and turn["speaker"] == speaker
        assert turn["words_end_s"] < turn["audio"].size / rate <= turn["words_end_s"] + 0.11
        words = turn["audio"][: int(turn["words_end_s"] * rate)]
        assert np.abs(words[-int(0.2 * rate):]).max() > 0.01  # words up to where they are said to end
        if kind == "answer":
            code = "".join(part for part in parts if isinstance(part, str))
            assert len(code) == 4 and set(code) <= set("12345"), code
            # one speaker a code, a file per digit, the digits said
            assert turn["files"] == [f"digit_{d}_{speaker}.wav" for d in code] and speaker in ("b", "y")
            assert parse_digits(turn["said"]) == code and digit_answer_evidence(turn["said"])
            assert len(turn["gaps_s"]) == 3
            for gap in turn["gaps_s"]:
                if gap == 1.2:  # the code said in two parts
                    pauses += 1
                else:
                    assert HUMAN_GAP_S[0] <= gap <= HUMAN_GAP_S[1], gap
        else:  # real phrases that fill nothing
            assert turn["files"] and all(name.startswith("phrase_") for name in turn["files"])
            assert not parse_digits(turn["said"])
    assert pauses == 1
    gaps = [g for turn in turns for g in turn["gaps_s"] if g != 1.2]
    assert max(gaps) - min(gaps) > 0.15  # the gaps vary, as people's do


def test_the_bench_flow_takes_the_human_codes_as_whisper_writes_them():
    flow = _flow(8, HUMAN_CALLER)
    slots = flow.spec.slots
    assert len(slots) == sum(kind == "answer" for _, kind in HUMAN_CALLER)
    for turn in human_turns():
        if turn["kind"] != "answer":
            continue
        code = parse_digits(turn["said"])
        for written in (" ".join(code), ", ".join(code), code):  # "4 2 1 3", "4, 2, 1, 3", "4213"
            assert parse_digits(written) == code and digit_answer_evidence(written)
        for spec in slots.values():
            assert spec.type == "digits" and spec.min_length <= len(code) <= spec.max_length
