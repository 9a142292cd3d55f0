"""`lull bench stt --line pstn`: what the agent's ears make of a telephone line, on the
same callers wideband and through the line's caller-to-agent direction, in one run.

The callers are `lull bench stt`'s (piper's voice at 16 kHz over room noise: codes, half
said in two parts, yes/no answers, requests; one seed). For each, through the line
(`LineDirection.through`: aligned with the wideband clip, so times compare directly):

- whisper, the two decodes in use (a code or a yes/no: the short windows; anything
  else: the 30 s window): what it reads right, and its decode time;
- Silero VAD as the voice backends run it (`voices.vad.SpeechSegmenter`, 300 ms of
  pre-roll, pauses reported after 96 ms, a 500 ms hold): how long after the words'
  last audible sample it calls the speech over (the end-of-turn clock starts there),
  how many pauses it reports inside an utterance (each one a speculative decode), and
  whether an utterance becomes as many segments as it was said in (one, or two for a
  code said in two parts: its pause is longer than the hold);
- the VAD on the line's noise alone, at the line's floor and louder: speech it starts
  where nobody spoke.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from .pstn import LineSettings, PhoneLine

RATE = 16000
HOLD_MS = 500.0


def _vad_figures(segmenter, audio: np.ndarray, speech_end_ms: float) -> dict:
    segmenter.reset()
    padded = np.concatenate([audio, np.zeros(int(1.5 * RATE), np.float32)])  # room for the hold to run out
    if len(padded) > len(audio):
        padded[len(audio):] = audio[-RATE // 10 :].std() * np.random.default_rng(0).standard_normal(len(padded) - len(audio))
    events = []
    for i in range(0, len(padded), 512):
        events += segmenter.feed(padded[i : i + 512], i * 1000.0 / RATE)
    ended = [e for e in events if e.kind == "speech_ended"]
    return {
        "segments": sum(e.kind == "speech_started" for e in events),
        "pauses": sum(e.kind == "pause_started" for e in events),
        "end_lag_ms": (ended[-1].speech_end_ms - speech_end_ms) if ended else None,
    }


def run_line_listen_bench(models, line: LineSettings, codes: int = 48, seed: int = 7, answers: int | None = None,
                          noise_seconds: float = 60.0, full_window: bool = True) -> dict:
    """The callers (`codes`, and the first `answers` of the fixed answers and requests:
    all by default) wideband and through `line`; the VAD on `noise_seconds` of the
    line's noise alone at each level. `full_window=False` leaves out the 30 s decode."""
    from ladder.flow.understanding.text import parse_digits, parse_yes_no
    from voices.backends.voice import PRE_ROLL_MS, SPECULATE_AFTER_MS
    from voices.levels import audible_end
    from voices.stt_bench import IN_USE, SHORT, _normal, all_variants, make_callers
    from voices.vad import SileroVad, SpeechSegmenter

    recognizer = models.recognizer
    pauses: list[float] = []
    callers = make_callers(models.voice, codes, seed=seed, answers=answers, pauses=pauses)
    variants = {name: all_variants()[name] for name in ((IN_USE, SHORT) if full_window else (SHORT,))}
    channels = ("wideband", "line")
    right = {c: {n: {"digits": 0, "words": 0, "yes_no": 0} for n in variants} for c in channels}
    times = {c: {n: [] for n in variants} for c in channels}
    misses = {c: {n: [] for n in variants} for c in channels}
    vad = {c: [] for c in channels}
    parts = {c: {"as_said": 0, "more": 0, "fewer": 0} for c in channels}  # segments against the parts said
    segmenter = SpeechSegmenter(SileroVad(models.vad_model), end_of_speech_ms=HOLD_MS, pre_roll_ms=PRE_ROLL_MS,
                                report_pauses=True, pause_report_ms=SPECULATE_AFTER_MS)
    recognizer.transcribe(callers[0][0])  # warm-up
    for k, (audio, truth, kind) in enumerate(callers):
        line_audio = PhoneLine(LineSettings(**{**line.__dict__, "seed": line.seed + k})).uplink.through(audio)
        # the words' end, from the room-noise clip: its last audible window
        end = audible_end(audio, RATE)
        end_ms = (end if end is not None else len(audio)) * 1000.0 / RATE
        for channel, heard in (("wideband", audio), ("line", line_audio)):
            figures = _vad_figures(segmenter, heard, end_ms)
            vad[channel].append(figures)
            said_parts = 2 if pauses[k] > 0 else 1  # a code said in two parts, a pause over the hold between
            parts[channel]["as_said" if figures["segments"] == said_parts else "more" if figures["segments"] > said_parts else "fewer"] += 1
            for name, options in variants.items():
                started = time.perf_counter()
                text = recognizer.transcribe(heard, **options).text
                times[channel][name].append((time.perf_counter() - started) * 1000.0)
                if kind == "digits":
                    ok = parse_digits(text) == truth
                elif kind == "yes_no":
                    ok = parse_yes_no(text) == (truth == "yes")
                else:
                    ok = _normal(text) == _normal(truth)
                right[channel][name][kind] += ok
                if not ok:
                    misses[channel][name].append(f"{truth!r} -> {text!r}")
    counts = {kind: sum(k == kind for *_, k in callers) for kind in ("digits", "words", "yes_no")}

    def vad_summary(rows: list[dict]) -> dict:
        lags = [r["end_lag_ms"] for r in rows if r["end_lag_ms"] is not None]
        return {
            "end_lag_median_ms": round(statistics.median(lags), 1) if lags else None,
            "end_lag_p90_ms": round(float(np.percentile(lags, 90)), 1) if lags else None,
            "pauses_per_utterance": round(statistics.mean(r["pauses"] for r in rows), 2),
            "not_heard": sum(1 for r in rows if not r["segments"]),
        }

    return {
        "seed": seed,
        "callers": counts,
        "line": PhoneLine(line).describe(),
        "whisper": {
            name: {c: {"digits_right": right[c][name]["digits"], "yes_no_right": right[c][name]["yes_no"],
                       "words_right": right[c][name]["words"], "median_ms": round(statistics.median(times[c][name]), 1),
                       "misses": misses[c][name]} for c in channels}
            for name in variants
        },
        "vad": {c: vad_summary(vad[c]) for c in channels},
        "segments_against_parts_said": parts,
        "noise_only_speech_started_per_minute": _noise_only(segmenter, line, noise_seconds),
    }


def _noise_only(segmenter, line: LineSettings, seconds: float = 60.0) -> dict:
    """Speech the VAD starts in `seconds` of the line carrying nothing but its noise,
    per minute."""
    out = {}
    for level in sorted({line.noise_dbfs if line.noise_dbfs is not None else -45.0, -35.0, -30.0}):
        direction = PhoneLine(LineSettings(**{**line.__dict__, "noise_dbfs": level})).uplink
        heard = direction.process(np.zeros(int(seconds * RATE), np.float32))
        segmenter.reset()
        events = []
        for i in range(0, len(heard), 512):
            events += segmenter.feed(heard[i : i + 512], i * 1000.0 / RATE)
        out[f"{level:g} dBFS"] = round(sum(e.kind == "speech_started" for e in events) * 60.0 / seconds, 1)
    return out


__all__ = ["run_line_listen_bench"]
