"""Phrasings as a live call hears them (`lull bench intents FLOW --phrasings FILE
--spoken [--line pstn]`, `--audio DIR`).

A phrasing file is text; a caller's turn reaches Lull through a microphone or a phone
line and a recogniser. Here each phrasing is spoken by several voices (piper at three
speeds with its sampling noise on; espeak-ng in several accents), with the apostrophes
that transcript-style text leaves out put back for the speaker ("im back" is said as
"I'm back"), framed as Lull's own backend hands a turn to whisper (300 ms before, room
noise under it), optionally sent down a phone line (`voices.line.pstn`: 8 kHz G.711
mu-law, a noise floor, seeded jitter and loss), and heard by Lull's whisper with the
options a live call uses for the answer to the flow's question
(`voices.backends.voice.options_for`). What it heard is then read by the flow's matcher,
as any turn is.

Each phrase is said by `SPEAKERS_A_PHRASE` of the `SPEAKERS`, chosen by its text, so
every voice hears every intent and a rerun says each phrase in the same voices. What
was heard is kept by content (the phrase, the voice, the line, the recogniser and its
options) in a JSON file (`HeardCache`): a rerun costs only the reading.

A designer's own recordings (`--audio DIR`): DIR holds `manifest.json`, a list of
`{"audio": "wait_request/00.wav", "intent": "wait_request"}` (`"none"` for off-topic),
16 kHz or 8 kHz WAV, each heard and read the same way.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .phrasing_bench import NONE_KEY, PhrasingFileError

SAMPLE_RATE = 16000
BEFORE_S, AFTER_S = 0.3, 0.4  # the turn as Lull's backend frames it (voices.stt.framed_like_lull)
ROOM_NOISE_DBFS = -55.0  # a quiet room under the caller, on the wideband path
SPEECH_LEVEL = 0.7  # peak of the caller's speech against full scale


@dataclass(frozen=True)
class Speaker:
    """A synthetic caller's voice: piper at a speed (its length scale), or an espeak-ng
    voice at a rate in words a minute."""

    name: str
    engine: str  # "piper" or "espeak"
    setting: str  # piper: length scale; espeak: its voice name
    rate: int = 150  # espeak-ng: words a minute


SPEAKERS: tuple[Speaker, ...] = (
    Speaker("piper-slow", "piper", "1.25"),
    Speaker("piper", "piper", "1.0"),
    Speaker("piper-fast", "piper", "0.8"),
    Speaker("espeak-us", "espeak", "en-us", 160),
    Speaker("espeak-scotland", "espeak", "en-gb-scotland", 140),
    Speaker("espeak-caribbean", "espeak", "en-029", 150),
    Speaker("espeak-west-midlands", "espeak", "en-gb-x-gbcwmd", 135),
    Speaker("espeak-new-york", "espeak", "en-us-nyc", 175),
)
SPEAKERS_A_PHRASE = 3

# transcript-style text leaves the apostrophes out; the speaker says the word meant
_CONTRACTIONS = {
    "im": "I'm", "ive": "I've", "id": "I'd", "dont": "don't", "cant": "can't", "wont": "won't",
    "didnt": "didn't", "doesnt": "doesn't", "isnt": "isn't", "wasnt": "wasn't", "arent": "aren't",
    "werent": "weren't", "couldnt": "couldn't", "shouldnt": "shouldn't", "wouldnt": "wouldn't",
    "havent": "haven't", "hasnt": "hasn't", "hadnt": "hadn't", "thats": "that's", "whats": "what's",
    "theres": "there's", "youre": "you're", "theyre": "they're", "weve": "we've", "youve": "you've",
    "ill": "I'll", "its": "it's", "lets": "let's", "hes": "he's", "shes": "she's", "wheres": "where's",
    "whos": "who's", "aint": "ain't", "gimme": "give me", "lemme": "let me", "gonna": "going to",
    "wanna": "want to", "gotta": "got to",
}
# "its" and "lets" sound as "it's" and "let's" do; "ill" is a word of its own after these
_ILL_AS_WORD = {"feel", "felt", "feeling", "been", "is", "was", "am", "very", "so", "too", "fell", "taken", "quite", "really"}


def spoken_text(phrase: str) -> str:
    """The phrase as the caller would say it: the contractions' apostrophes back."""
    words = re.split(r"([A-Za-z]+)", phrase)
    before = ""
    for i in range(1, len(words), 2):
        low = words[i].lower()
        if low in _CONTRACTIONS and not (low == "ill" and before in _ILL_AS_WORD):
            words[i] = _CONTRACTIONS[low]
        before = low
    return "".join(words)


def speakers_for(phrase: str, count: int = SPEAKERS_A_PHRASE) -> list[Speaker]:
    """The voices that say `phrase`: `count` in a row from one its text picks."""
    start = int(hashlib.sha1(phrase.encode()).hexdigest(), 16) % len(SPEAKERS)
    return [SPEAKERS[(start + i) % len(SPEAKERS)] for i in range(min(count, len(SPEAKERS)))]


class Voices:
    """The synthetic callers, loaded once: piper at each speed (noise on), espeak-ng."""

    def __init__(self) -> None:
        self._piper: dict[str, object] = {}

    def say(self, text: str, speaker: Speaker) -> np.ndarray:
        """`text` said by `speaker`, at 16 kHz."""
        from voices.stt import resample

        if speaker.engine == "piper":
            voice = self._piper.get(speaker.setting)
            if voice is None:
                from voices.tts import PiperVoice

                voice = self._piper[speaker.setting] = PiperVoice(length_scale=float(speaker.setting))
            audio = voice.synthesize_all(text)  # type: ignore[attr-defined]
            return resample(audio, voice.sample_rate, SAMPLE_RATE)  # type: ignore[attr-defined]
        return _espeak(text, speaker.setting, speaker.rate)


def _espeak(text: str, voice: str, rate: int) -> np.ndarray:
    import io

    import soundfile

    from voices.stt import resample

    try:
        done = subprocess.run(["espeak-ng", "-v", voice, "-s", str(rate), "--stdout", text],
                              capture_output=True, check=True, timeout=30)
    except FileNotFoundError:
        raise PhrasingFileError("espeak-ng is not installed: --spoken needs it for its accented voices "
                                "(apt-get install espeak-ng)") from None
    audio, rate_in = soundfile.read(io.BytesIO(done.stdout), dtype="float32")
    return resample(audio.reshape(-1) if audio.ndim == 1 else audio.mean(axis=1), rate_in, SAMPLE_RATE)


def framed(audio: np.ndarray, seed: int) -> np.ndarray:
    """The caller's speech at a speaking level, with the silence around it that a live
    turn has, over a quiet room."""
    peak = float(np.max(np.abs(audio))) if audio.size else 0.0
    speech = audio * (SPEECH_LEVEL / peak) if peak > 0 else audio
    out = np.concatenate([np.zeros(int(BEFORE_S * SAMPLE_RATE), np.float32), speech.astype(np.float32),
                          np.zeros(int(AFTER_S * SAMPLE_RATE), np.float32)])
    rng = np.random.default_rng(seed)
    return (out + rng.normal(0.0, 10 ** (ROOM_NOISE_DBFS / 20), out.size)).astype(np.float32)


def down_the_line(audio: np.ndarray, line) -> np.ndarray:  # noqa: ANN001
    """Wideband audio as the far end of `line` (voices.line.pstn.LineSettings) gives it."""
    from voices.line.pstn import LineDirection

    return LineDirection(SAMPLE_RATE, line, stream=0).through(audio)


def line_key(line) -> str:  # noqa: ANN001
    if line is None:
        return "wideband"
    return f"{line.kind}:noise={line.noise_dbfs}:loss={line.loss}:jitter={line.jitter_ms}:seed={line.seed}"


class HeardCache:
    """What the recogniser heard, by content: `key -> words`, one JSON file, written
    whole and renamed into place (a killed run leaves the old file)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.heard: dict[str, str] = {}
        self.new = 0  # heard since the last save
        self.added = 0  # heard in this run
        if path is not None and path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = {}
            if isinstance(data, dict):
                self.heard = {k: v for k, v in data.items() if isinstance(v, str)}

    @staticmethod
    def key(*parts: object) -> str:
        return hashlib.sha1("\x1f".join(map(str, parts)).encode()).hexdigest()[:20]

    def get(self, key: str) -> str | None:
        return self.heard.get(key)

    def put(self, key: str, words: str) -> None:
        self.heard[key] = words
        self.new += 1
        self.added += 1

    def save(self) -> None:
        if self.path is None or not self.new:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(dict(sorted(self.heard.items())), out, indent=0, ensure_ascii=False)
        os.replace(tmp, self.path)
        self.new = 0


@dataclass(frozen=True)
class HeardTurn:
    intent: str  # the intent it was written as ("none": off-topic)
    written: str  # the phrase, or the recording's file
    speaker: str
    heard: str  # what the recogniser made of it


class Hearer:
    """Speaks and hears phrasings as a live call hears the answer to a flow's question."""

    def __init__(self, recognizer, options: dict, cache: HeardCache, voices: Voices | None = None,  # noqa: ANN001
                 cached_only: bool = False) -> None:
        self.cached_only = cached_only  # read what was heard before; hear nothing anew
        self.recognizer = recognizer
        self.options = dict(options)
        self.cache = cache
        self.voices = voices or Voices()

    def _hear(self, audio: np.ndarray) -> str:
        return self.recognizer.transcribe(audio, **self.options).text

    @property
    def _model(self) -> str:
        """The recogniser's name in the key ("tiny.en (bundled)"), known without loading it."""
        name = getattr(self.recognizer, "model_name", None)
        if name is None:
            from voices.stt import WhisperRecognizer

            name = WhisperRecognizer._resolve(None)[1]
        return str(name)

    def phrasings(self, phrasings: dict[str, list[str]], line=None,  # noqa: ANN001
                  progress: Callable[[int], None] | None = None) -> Iterator[HeardTurn]:
        done = 0
        for intent, phrases in phrasings.items():
            for phrase in phrases:
                for speaker in speakers_for(phrase):
                    key = HeardCache.key(phrase, speaker, line_key(line), self._model, sorted(self.options.items()))
                    words = self.cache.get(key)
                    if words is None and self.cached_only:
                        raise PhrasingFileError(f"{self.cache.path}: {phrase!r} said by {speaker.name} was never heard "
                                                "(run the bench without the cache-only check to hear it)")
                    if words is None:
                        seed = int(key[:8], 16)
                        audio = framed(self.voices.say(spoken_text(phrase), speaker), seed)
                        if line is not None:
                            audio = down_the_line(audio, line)
                        words = self._hear(audio)
                        self.cache.put(key, words)
                        if self.cache.new % 50 == 0:
                            self.cache.save()  # a long first run keeps what it has heard
                    done += 1
                    if progress is not None:
                        progress(done)
                    yield HeardTurn(intent, phrase, speaker.name, words)
        self.cache.save()

    def recordings(self, folder: Path, entries: list[tuple[Path, str]], line=None) -> Iterator[HeardTurn]:  # noqa: ANN001
        from voices.stt import load_wav_16k

        for path, intent in entries:
            data = path.read_bytes()
            key = HeardCache.key(hashlib.sha1(data).hexdigest(), line_key(line), self._model, sorted(self.options.items()))
            words = self.cache.get(key)
            if words is None:
                audio = load_wav_16k(path)
                if line is not None:
                    audio = down_the_line(audio, line)
                words = self._hear(audio)
                self.cache.put(key, words)
            yield HeardTurn(intent, str(path.relative_to(folder)), "recording", words)
        self.cache.save()


def load_manifest(folder: Path, intents: dict) -> list[tuple[Path, str]]:
    """`folder/manifest.json`'s recordings, checked: each names an intent the flow's
    matcher knows (or "none") and a readable WAV file at 16 or 8 kHz."""
    import soundfile

    manifest = folder / "manifest.json"
    if not folder.is_dir():
        raise PhrasingFileError(f"{folder}: not a folder (expected a folder holding manifest.json and the recordings)")
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PhrasingFileError(f"{manifest}: missing: expected a list of {{\"audio\": \"wait_request/00.wav\", \"intent\": \"wait_request\"}}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PhrasingFileError(f"{manifest}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise PhrasingFileError(f"{manifest}: line {exc.lineno} column {exc.colno}: invalid JSON: {exc.msg}") from None
    if not isinstance(data, list) or not data:
        raise PhrasingFileError(f'{manifest}: expected a non-empty list of {{"audio": "wait_request/00.wav", "intent": "wait_request"}}')
    known = sorted(intents)
    entries = []
    for i, entry in enumerate(data):
        where = f"{manifest}: entry {i + 1}"
        if not isinstance(entry, dict) or not isinstance(entry.get("audio"), str) or not isinstance(entry.get("intent"), str):
            raise PhrasingFileError(f'{where}: expected {{"audio": "a file in {folder.name}", "intent": "an intent or none"}}')
        intent = entry["intent"]
        if intent != NONE_KEY and intent not in intents:
            raise PhrasingFileError(f"{where}: intent {intent!r} is not one the flow's matcher knows; expected one of "
                                    f"{', '.join(known)} or {NONE_KEY!r} (off-topic)")
        path = (folder / entry["audio"]).resolve()
        if not path.is_file():
            raise PhrasingFileError(f"{where}: {entry['audio']}: no such file in {folder}")
        try:
            info = soundfile.info(str(path))
        except Exception:  # noqa: BLE001 (soundfile raises its own kinds for a file it cannot read)
            raise PhrasingFileError(f"{where}: {entry['audio']}: not a WAV file soundfile can read") from None
        if info.samplerate not in (8000, 16000):
            raise PhrasingFileError(f"{where}: {entry['audio']}: {info.samplerate} Hz; expected 16 kHz or 8 kHz WAV")
        entries.append((path, intent))
    return entries


def prime_turns(matcher, texts: list[str]) -> None:  # noqa: ANN001
    """The turns a bench will read, featurised in one batch where the matcher can (the
    classifier: `ClassifierMatcher.prime`)."""
    prime = getattr(matcher, "prime", None)
    if prime is not None:
        prime(texts)


def read_heard(matcher, turns: list[HeardTurn]) -> dict:  # noqa: ANN001
    """The matcher on what was heard: right per intent, off-topic accepted, each miss
    with what was heard."""
    from voices.stt import word_error_rate

    results: dict[str, dict] = {}
    misses: list[dict] = []
    accepted: list[dict] = []
    voices: dict[str, dict] = {}
    prime_turns(matcher, [turn.heard for turn in turns])
    for turn in turns:
        got = matcher.match(turn.heard)[0] if turn.heard.strip() else None
        voice = voices.setdefault(turn.speaker, {"right": 0, "total": 0, "off_topic_accepted": 0, "off_topic_total": 0,
                                                 "word_error_sum": 0.0})
        if turn.speaker != "recording":  # a recording's words are not written down
            voice["word_error_sum"] += min(1.0, word_error_rate(spoken_text(turn.written), turn.heard))
        if turn.intent == NONE_KEY:
            voice["off_topic_total"] += 1
            if got is not None:
                voice["off_topic_accepted"] += 1
                accepted.append({"written": turn.written, "speaker": turn.speaker, "heard": turn.heard, "read_as": got})
            continue
        row = results.setdefault(turn.intent, {"right": 0, "total": 0})
        row["total"] += 1
        voice["total"] += 1
        if got == turn.intent:
            row["right"] += 1
            voice["right"] += 1
        else:
            misses.append({"intent": turn.intent, "written": turn.written, "speaker": turn.speaker,
                           "heard": turn.heard, "read_as": got or "unclear"})
    off_total = sum(1 for t in turns if t.intent == NONE_KEY)
    right = sum(r["right"] for r in results.values())
    total = sum(r["total"] for r in results.values())
    weakest = min(results, key=lambda k: results[k]["right"] / results[k]["total"]) if results else None
    return {
        "intents": results,
        "pooled": {"right": right, "total": total},
        "off_topic": {"accepted": len(accepted), "total": off_total},
        "weakest": None if weakest is None else {"intent": weakest, **results[weakest]},
        "misses": misses,
        "off_topic_accepted": accepted,
        "voices": {name: _voice_row(v) for name, v in sorted(voices.items())},
    }


def _voice_row(v: dict) -> dict:
    """One voice's figures: right of its intent turns, off-topic accepted, and how far
    what was heard was from the words said (word error, each turn's capped at 1, as a
    sum and a mean, so voices and flows pool)."""
    turns = v["total"] + v["off_topic_total"]
    return {"right": v["right"], "total": v["total"], "off_topic_accepted": v["off_topic_accepted"],
            "off_topic_total": v["off_topic_total"], "word_error_sum": round(v["word_error_sum"], 4),
            "word_error": round(v["word_error_sum"] / turns, 3) if turns else None}


def pool_voices(rows: list[dict]) -> dict:
    """Voices' figures (`read_heard`'s "voices") pooled over flows, each voice and each
    engine of the synthetic ones ("all piper", "all espeak")."""
    engines = {speaker.name: speaker.engine for speaker in SPEAKERS}
    pooled: dict[str, dict] = {}
    for row in rows:
        for name, v in row.items():
            for key in (name, f"all {engines[name]}") if name in engines else (name,):
                into = pooled.setdefault(key, {"right": 0, "total": 0, "off_topic_accepted": 0, "off_topic_total": 0,
                                               "word_error_sum": 0.0})
                for field in into:
                    into[field] += v[field]
    return {name: _voice_row(v) for name, v in pooled.items()}


def question_options(flow) -> dict:  # noqa: ANN001
    """Whisper's options for the answer to the flow's first question that collects a
    slot: what a live call decodes that answer with (its window, and what whisper is
    told first: `recogniser_context`)."""
    from voices.backends.voice import options_for

    from .recogniser_context import context_for

    for stage in flow.spec.stages:
        if stage.collect:
            return options_for((flow.spec.slots[stage.collect[0]],), context_for(flow.spec, stage.id))
    return options_for(None, context_for(flow.spec, None))


__all__ = ["SPEAKERS", "HeardCache", "HeardTurn", "Hearer", "Speaker", "Voices", "load_manifest", "pool_voices",
           "prime_turns", "question_options", "read_heard", "speakers_for", "spoken_text"]


# the understanding issue's targets: per condition, pooled over a flow set's phrasings
TARGETS_POOLED = {"text": 0.95, "spoken": 0.92, "line": 0.88}
TARGET_EVERY_INTENT_TEXT = 0.85
TARGET_OFF_TOPIC = 1 / 12  # at most 1 of 12 off-topic turns accepted, per flow and condition


def default_cache_path(source: Path) -> Path | None:
    """Where the transcripts heard of `source` (a phrasing file or a folder) are kept by default."""
    from .disk_cache import cache_dir

    base = cache_dir()
    if base is None:
        return None
    return base / "heard" / f"{hashlib.sha1(str(source.resolve()).encode()).hexdigest()[:16]}.json"


def heard_bench(flow_ref: str, *, phrasings: Path | None = None, audio: Path | None = None, spoken: bool = False,
                line=None, matcher_kind: str = "classifier", cache_path: Path | None = None,  # noqa: ANN001
                recognizer=None, progress: Callable[[int], None] | None = None,  # noqa: ANN001
                cached_only: bool = False) -> dict:
    """Text, spoken and line figures side by side for one flow: `phrasings` as written,
    spoken (`spoken`) and down `line`; or `audio`'s recordings, wideband and down `line`."""
    from .phrasing_bench import _build, _flow_intents, _measure, load_phrasings

    flow, intents = _flow_intents(flow_ref, True)
    entries = load_manifest(audio, intents) if audio is not None else None
    written = load_phrasings(phrasings, intents) if phrasings is not None else None
    matcher, build_ms = _build(intents, matcher_kind)
    out: dict = {"flow": flow.spec.name, "matcher": matcher_kind, "conditions": {}}
    if written is not None:
        out["phrasings"] = str(phrasings)
        text = _measure(flow, intents, matcher, build_ms, phrasings, matcher_kind, True)
        out["conditions"]["text"] = {k: text[k] for k in ("intents", "pooled", "off_topic", "weakest", "misses",
                                                          "off_topic_accepted", "match_ms_per_turn")}
    if recognizer is None and not cached_only:
        from voices.stt import WhisperRecognizer

        recognizer = WhisperRecognizer()
    source = audio if audio is not None else phrasings
    assert source is not None
    base = cache_path if cache_path is not None else default_cache_path(source)
    options = question_options(flow)
    conditions = []
    if audio is not None:
        out["audio"] = str(audio)
        conditions.append(("recorded", None))
        if line is not None:
            conditions.append(("recorded_line", line))
    else:
        if spoken:
            conditions.append(("spoken", None))
        if line is not None:
            conditions.append(("line", line))
    heard_new = 0
    for name, channel in conditions:
        # a file a condition: two runs hearing different conditions never write one file
        cache = HeardCache(None if base is None else base.with_name(f"{base.stem}.{name}.json"))
        hearer = Hearer(recognizer, options, cache, cached_only=cached_only)
        if entries is not None:
            turns = list(hearer.recordings(audio, entries, channel))  # type: ignore[arg-type]
        else:
            turns = list(hearer.phrasings(written, channel, progress))  # type: ignore[arg-type]
        out["conditions"][name] = {**read_heard(matcher, turns), "turns": len(turns)}
        heard_new += cache.added
    if line is not None:
        out["line"] = {"kind": line.kind, "noise_dbfs": line.noise_dbfs, "loss": line.loss,
                       "jitter_ms": line.jitter_ms, "seed": line.seed}
    out["speakers"] = [s.name for s in SPEAKERS] if audio is None else ["recording"]
    out["heard_new"] = heard_new
    return out


def heard_yardstick(folder: Path, *, sets: tuple[str, ...] = ("sealed",), spoken: bool = True, line=None,  # noqa: ANN001
                    matcher_kind: str = "classifier", recognizer=None,  # noqa: ANN001
                    progress: Callable[[str], None] | None = None, cached_only: bool = False) -> dict:
    """Every flow in `folder` against its phrasings in each of `sets`, as text, spoken
    and down `line`, each condition's targets MET or MISSED. What was heard is kept in
    `folder/heard/SET/FLOW.CONDITION.json`, so a rerun reads only."""
    flows = sorted(folder.glob("*.json"))
    if not flows:
        raise PhrasingFileError(f"{folder}: no flow files (*.json) to measure")
    if recognizer is None and not cached_only:
        from voices.stt import WhisperRecognizer

        recognizer = WhisperRecognizer()
    out: dict = {"folder": str(folder), "matcher": matcher_kind, "flows": {}, "sets": {}}
    for name in sets:
        for flow in flows:
            path = folder / name / flow.name
            if not path.is_file():
                raise PhrasingFileError(f"{path}: missing: every flow needs a {name} phrasing file beside it")
            if progress is not None:
                progress(f"{name}/{flow.stem}")
            result = heard_bench(str(flow), phrasings=path, spoken=spoken, line=line, matcher_kind=matcher_kind,
                                 cache_path=folder / "heard" / name / flow.name, recognizer=recognizer,
                                 cached_only=cached_only)
            out["flows"].setdefault(flow.stem, {})[name] = result["conditions"]
        out["sets"][name] = _targets({f.stem: out["flows"][f.stem][name] for f in flows})
    return out


def _targets(per_flow: dict[str, dict]) -> dict:
    """Per condition, pooled over the flows: the figure and each target MET or not."""
    conditions: dict = {}
    for condition in ("text", "spoken", "line"):
        rows = {flow: c[condition] for flow, c in per_flow.items() if condition in c}
        if not rows:
            continue
        right = sum(r["pooled"]["right"] for r in rows.values())
        total = sum(r["pooled"]["total"] for r in rows.values())
        worst_off = max(r["off_topic"]["accepted"] / max(1, r["off_topic"]["total"]) for r in rows.values())
        targets = {f"pooled >= {TARGETS_POOLED[condition]:.0%}": right / max(1, total) >= TARGETS_POOLED[condition],
                   "at most 1 of 12 off-topic accepted, every flow": worst_off <= TARGET_OFF_TOPIC + 1e-9}
        if condition == "text":
            worst = min(((f, i, v["right"] / v["total"]) for f, r in rows.items() for i, v in r["intents"].items()),
                        key=lambda t: t[2])
            targets[f"every intent >= {TARGET_EVERY_INTENT_TEXT:.0%}"] = worst[2] >= TARGET_EVERY_INTENT_TEXT
            ms = max(r.get("match_ms_per_turn", 0.0) for r in rows.values())
            targets["under 20 ms a turn"] = ms < 20.0
        voices = {"voices": pool_voices([r["voices"] for r in rows.values()])} if condition != "text" else {}
        conditions[condition] = {**voices, "pooled": {"right": right, "total": total},
                                 "off_topic": {"accepted": sum(r["off_topic"]["accepted"] for r in rows.values()),
                                               "total": sum(r["off_topic"]["total"] for r in rows.values())},
                                 "targets": targets}
    return conditions


__all__ += ["TARGETS_POOLED", "heard_bench", "heard_yardstick"]
