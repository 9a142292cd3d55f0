"""The voice backends: piper speaks, Silero VAD and whisper listen (V1-V9).

One module per backend; this one holds what they share:

- `VoiceModels`: the on-device models, loaded once;
- `VoiceBackend`: speaking (piper in a worker, chunks to the output), listening (one
  straight line per caller utterance, below), health, recordings and their masks.

The backends differ only in where frames come from and where the agent's audio goes:
`voices.backends.audio.AudioBackend` (a real microphone and speaker through sounddevice,
with echo cancellation and media health) and `voices.backends.file.FileBackend` (a
caller WAV at real-time pace, a clocked speaker with no device, an optional simulated
room echo); `voices.backends` exports both.

One caller utterance, from the microphone to the core:

1. the device callback copies the block and hands it off (`voices.audio.MicStream`);
2. `on_frames(raw, t_ms)` on the loop: media health sees the raw frames; the echo
   recording gets what the microphone heard; the echo canceller
   (`voices.echo.EchoCanceller`) takes the agent's own voice out, 10 ms at a time, with
   what the speaker played as its far end; on a telephone line (`--line pstn`) the raw
   frames first go through the line's caller->agent direction (`voices.line.pstn`), and
   the recording and the canceller get what the line delivered;
3. `_listen`: Silero VAD segments the audio; while the agent is audible, a segment
   becomes a caller turn only with evidence beyond the echo estimate
   (`voices.echo.EchoGate`); while the input is failed, nothing heard is a turn;
3b. slot-aware end of turn (V9): at each pause within a turn (once it has lasted
   SPECULATE_AFTER_MS), while a question is pending, what was said so far is decoded in the STT worker (`_pause_started`,
   speculatively). If it holds a complete value for the pending slot (a code of the
   allowed length, a clear yes or no) the turn ends once the pause has lasted the
   stage's `complete_value_end_ms`, not the whole hold; if it holds a partial value
   (two digits of four) the hold grows to the stage's `partial_value_hold_ms`, so a
   caller who pauses mid-code gives one answer. Each decision is journaled
   (`end_of_turn`, with its reason). If the pause becomes the end of the turn, the
   speculative words are the turn's words: no second decode;
4. a turn that ended goes to whisper in a worker (`_recognize`), then back to the loop
   (`_heard`): intent, `CallerUtterance` into the core; if the core answers it with a
   prompt, the turn's latency is noted when that prompt's first sample plays, from the
   end of the caller's speech as heard to the first audible sample
   (`voices.backends.turn_latency.TurnLatency`); a turn the agent does not answer has none.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ladder import (
    CallerUtterance,
    PlaybackCompleted,
    PlaybackInterrupted,
    PlaybackStarted,
    PromptFailed,
    RequestPrompt,
    TransportFailed,
    TurnEnded,
    TurnStarted,
)
from ladder.flow.understanding.shared_intents import flow_intents
from voices.background_voices import (
    ROOM_EVIDENCE_FRAMES,
    ROOM_LOOKBACK_MS,
    BackgroundVoices,
    gated_to_caller,
    speech_level_dbfs,
)
from voices.echo import EchoGate, power
from voices.end_of_turn import DECODE_WAIT_MS, holds_value, pending_slot
from voices.health import InputFailureReport
from voices.levels import audible_end, audible_onset
from voices.recording import CallRecorder, refuse_existing
from voices.vad import SpeechEvent

from .secret_audio import SecretAudio
from .text import TypedTurns
from .turn_latency import TurnLatency

if TYPE_CHECKING:
    from sessions.live import LiveSession
    from voices.echo import EchoCanceller

VAD_RATE = 16000
PRE_ROLL_MS = 300
# A pause is decoded speculatively once it has lasted this long (voices.vad), not at its
# first quiet frame: the dips between a caller's digits each started a decode, and one
# already running holds the worker when the caller goes on. `lull bench turn`'s caller
# (the file backend, two runs each): median wait 634 and 629 ms at 0, 552 and 506 at 64,
# 448 and 445 at 96, 503 and 481 at 160; a held-out caller (other codes and sentences,
# no dips mid-code) 417 ms at 0 and 429 at 96.
SPECULATE_AFTER_MS = 96.0
# While a pause's words are being decoded, the turn's hold waits for them (at most this
# long into the pause, the frameworks' bound: voices.end_of_turn.DECODE_WAIT_MS): on a
# busy machine the decode of "two three" outlasted the 500 ms hold, the turn ended
# before its words said "part of a code", and the code said in two parts was cut at its
# pause ("Two, three." then "5, 4,"; "3 1" then "5, 2").
WORDS_DUE_MS = SPECULATE_AFTER_MS + DECODE_WAIT_MS
BARGE_IN_EVIDENCE = 3  # frames (about 32 ms each) louder than the echo estimate
# A barge-in's audio starts this long before the first frame louder than the echo: over a
# loud speaker the caller's first word is masked, not absent ("hold on" and the first digit
# were lost with 300 ms, the laptop echo path at full volume); the canceller removes the
# agent's own voice from what is kept.
BARGE_IN_LOOKBACK_MS = 700
EVIDENCE_WINDOW = 12  # the frames looked back on when a segment starts (about 380 ms)
logging.getLogger("faster_whisper").setLevel(logging.WARNING)  # its INFO lines would tear the TUI


def decode_options(rt) -> dict:
    """Whisper's options for the words a flow runtime's pending question waits for: a
    code or a yes/no gets the short encoder window (voices.stt.SHORT_ANSWER_DECODE,
    measured by `lull bench stt`: as accurate on those at about 0.3 of the time);
    anything else the full one, told the question and what callers say between answers
    first (`recogniser_context`). Every backend's whisper decodes so, a framework's too."""
    return options_for(pending_slot(rt), recogniser_context(rt))


def recogniser_context(rt) -> str | None:
    """Whisper's prompt for the turn a flow runtime waits for: the question it asked
    (if any), the acts callers say between answers and the flow's routes; None
    without a flow."""
    if rt is None:
        return None
    from voices.understanding.recogniser_context import context_for

    asking = rt.asking[1] if rt.asking is not None and rt.ladder.pending_episode is not None else None
    return context_for(rt.flow.spec, asking)


def options_for(pending, context: str | None = None) -> dict:
    """Whisper's options for a pending slot as `pending_slot` gives it (None: none
    pending): a code the short windows, a yes/no the short windows told `context` first,
    anything else told `context` first (`recogniser_context`)."""
    from voices.stt import SHORT_ANSWER_DECODE
    from voices.understanding.recogniser_context import prompt_option

    if pending is not None and pending[0].type == "digits":
        # not told: a prompt cost the codes (`lull bench stt --caller human`: 77/80
        # against 79 wideband, 72/80 against 78 down the line, decodes 1.2-1.3x as long)
        return dict(SHORT_ANSWER_DECODE)
    if pending is not None and pending[0].type == "yes_no":
        # told: 120 yes/no answers written blind (yardstick2 answers/yes_no_dev.json), each
        # said by three voices, read right 266/360 told against 230 untold, and down the
        # line 234 against 189 ("no" is heard "know", "yeah" "yet" without the question)
        return {**SHORT_ANSWER_DECODE, **prompt_option(context)}
    return prompt_option(context)

__all__ = ["TurnLatency", "VoiceBackend", "VoiceModels", "decode_options", "pending_slot", "recogniser_context"]


@dataclass
class VoiceModels:
    """The on-device models, loaded once (in a worker: loading takes a few tenths)."""

    voice: Any
    recognizer: Any
    vad_model: Path | None = None
    # intent matching on the voice backends: a softmax classifier over MiniLM trained on
    # the flow's examples (voices.understanding.intent_classifier), its constants chosen by
    # cross-validation on those examples alone; `lull bench intents --matcher all`
    # measures it the most right of the kinds, with the fewest off-topic turns accepted
    matcher_kind: str = "classifier"
    load_s: dict = field(default_factory=dict)

    @classmethod
    def load(cls, *, voice_path: str | None = None, stt_model: str | None = None, deterministic: bool = False, matcher: str = "classifier") -> VoiceModels:
        from voices.stt import WhisperRecognizer
        from voices.tts import PiperVoice

        t = time.monotonic()
        voice = PiperVoice(voice_path, deterministic=deterministic)
        t_voice = time.monotonic() - t
        t = time.monotonic()
        recognizer = WhisperRecognizer(stt_model)
        t_stt = time.monotonic() - t
        return cls(voice, recognizer, matcher_kind=matcher, load_s={"piper": t_voice, "whisper": t_stt})


@dataclass
class _Segment:
    """A stretch the VAD calls speech, before and after it became a caller turn."""

    start_ms: float
    turn: tuple[str, int] | None = None  # set once it is a caller turn
    accepted_ms: float | None = None  # when the evidence made it one
    echo_suspect: bool = False  # began while the agent was audible
    room_suspect: bool = False  # began once the room's voices were known (a television)
    ignored: str | None = None  # never a turn: why
    next_check_ms: float = 0.0  # a turn still open then is checked for a reply
    room: Any = None  # judged the room's, not the caller's (voices.background_voices.RoomVerdict)
    last_loud_ms: float = 0.0  # over the room's voices: the caller's last frame louder than them


@dataclass
class _Speculation:
    """The decode of a turn's audio at the onset of a pause in it."""

    onset_ms: float
    turn: str
    recognition: Any = None
    stale: bool = False  # the caller spoke again: these words are not the turn's
    audio_for_retry: Any = None  # the turn's audio, should the speculative decode fail
    done: bool = False  # the decode came back (recognition None: it failed)
    waiting: tuple | None = None  # (turn, seq, latency): the turn ended and waits for these words


class VoiceBackend:
    """Speak and listen through real models; subclasses decide where audio comes and goes."""

    def __init__(
        self,
        models: VoiceModels,
        *,
        name: str,
        end_of_speech_ms: float = 700,
        health: Any = None,
        record_dir: Path | None = None,
        keep_secret_audio: bool = False,
        line: Any = None,
    ) -> None:
        """`line` (`voices.line.pstn.LineSettings`): the call on a telephone line. The
        caller's audio reaches the agent through its one direction (`on_frames`, before
        the echo canceller: the canceller and the gate are the agent's, and hear what the
        line delivers, the agent's own voice coming back down it included) and the
        agent's voice reaches the caller through the other (the subclass's speaker, which
        gives the canceller the agent's voice as it went onto the line: its far end,
        without the line's noise floor, which would keep the agent "audible" between
        prompts); mic.wav is what the agent heard from the line, out.wav what the caller
        heard, and each answered turn's latency adds the line's round trip."""
        self.name = name
        self.models = models
        self.on_line: Callable[[str, str], None] = lambda who, text: None
        self.session: LiveSession | None = None
        self.output: Any = None
        self.health = health
        self.echo: EchoCanceller | None = None  # set by a backend whose speaker the mic hears
        self.gate = EchoGate()
        if record_dir is not None:
            refuse_existing(record_dir)  # before any journal is made beside it
        self.record_dir = record_dir
        self.recorder: CallRecorder | None = None
        self.secrets = SecretAudio(keep=keep_secret_audio)
        self.default_end_of_speech_ms = end_of_speech_ms
        self.latencies: list[TurnLatency] = []
        self.level_dbfs = -120.0
        self.lose_next_completion = False
        self.delay_next_completion_ms = 0.0
        self.echo_rejected = 0  # segments the VAD heard that were the agent's own voice
        self._tts = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="lull-tts")
        self._stt = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="lull-stt")
        self._cancelled: set[int] = set()
        self._texts: dict[int, str] = {}
        self._turns = 0  # spoken turns
        self.typed = TypedTurns(self._feed, first_seq=10_000)
        self._segment: _Segment | None = None
        self._evidence: deque[tuple[float, bool | None]] = deque(maxlen=EVIDENCE_WINDOW)
        self._answering: TurnLatency | None = None  # the turn being fed to the core
        self._latency_of: dict[int, TurnLatency] = {}  # prompt token -> the turn it answers
        self._lead_ms: dict[int, float] = {}  # prompt token -> its first chunk's leading silence
        self.unanswered_turns = 0  # caller turns the agent did not answer with a prompt
        self.input_report = InputFailureReport()  # what the core is told of the microphone
        self._previews = 0
        self.matcher = None
        self.matcher_fallback: dict | None = None  # the kind asked for could not load (journaled, shown)
        self.segmenter = None
        self._stage_hold = end_of_speech_ms  # the merged end-of-speech hold of the active stages
        self._hold_extended = False  # this turn's pause holds a partial value
        self._partial_hold_ms = 0.0  # the hold a partial value gives (the stage's partial_value_hold_ms)
        self._spec: _Speculation | None = None
        self._frames_end_ms = 0.0  # the end of the last frame the VAD has seen
        self.room = BackgroundVoices()  # a television, people talking in the room
        self._room_evidence: deque[tuple[float, bool]] = deque(maxlen=EVIDENCE_WINDOW)
        self._turn_level: dict[str, float | None] = {}  # turn -> its speech level, dBFS
        self.line = None  # voices.line.pstn.PhoneLine
        if line is not None:
            from voices.line.pstn import PhoneLine

            self.line = PhoneLine(line, caller_rate=VAD_RATE, agent_rate=models.voice.sample_rate)
            self.journal_header = {"line": self.line.describe()}
            # the caller hears a prompt the line's delay after it played: its mask lasts as long
            self.secrets.out_delay_ms = self.line.downlink.delay_ms

    # -- wiring ----------------------------------------------------------------------

    def attach(self, session: LiveSession) -> None:
        from voices.vad import SileroVad, SpeechSegmenter

        self.session = session
        self.secrets.attach(session)
        # 300 ms of pre-roll: the VAD decides a little after the first syllable starts
        self.segmenter = SpeechSegmenter(
            SileroVad(self.models.vad_model), end_of_speech_ms=self.default_end_of_speech_ms, pre_roll_ms=PRE_ROLL_MS,
            report_pauses=True, pause_report_ms=SPECULATE_AFTER_MS,
        )
        spec = session.flow.spec
        if self.models.matcher_kind != "lexical":  # an embedding kind (voices.understanding.interpret)
            from voices.understanding.interpret import (
                InterpreterError,
                make_matcher,
                make_matcher_soon,
            )

            kind = self.models.matcher_kind
            try:
                # built before the call starts (`lull rehearse` begins it while the models
                # load): a build during the greeting competes with the audio for the CPU
                self.matcher = make_matcher_soon(flow_intents(spec), None, kind).get()
            except InterpreterError as exc:
                if kind == "embedding":
                    raise
                # MiniLM's wheel is installed apart from the project (.ci/setup): without
                # it, wordllama alone, and the journal says so
                self.matcher = make_matcher(flow_intents(spec), None, "embedding")
                self.matcher_fallback = {"asked": kind, "using": "embedding", "why": str(exc)[:200]}
        else:
            from ladder.flow.understanding.text import LexicalMatcher

            self.matcher = LexicalMatcher(flow_intents(spec).own_only(), spec.intent_threshold)

    def session_ms(self, monotonic_ms: float) -> float:
        """A device timestamp (time.monotonic in ms) on the journal's clock."""
        assert self.session is not None
        return self.session.from_monotonic_ms(monotonic_ms)

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        if self.matcher_fallback and self.session is not None:
            self.session.note("intent_matcher", self.matcher_fallback)

    # -- recording (S1, S6) ---------------------------------------------------------------

    def open_recordings(self, folder: Path) -> None:
        """Record mic.wav and out.wav into `folder` while the call runs: from now if the
        output is up, else from `start()`. Again for the same folder it does nothing;
        it refuses a folder that already holds a recording."""
        folder = Path(folder)
        current = self.recorder.folder if self.recorder is not None else self.record_dir
        if current is not None and current.resolve() != folder.resolve():
            raise ValueError(f"{folder}: this call already records into {current}")
        if current is None:
            refuse_existing(folder)
            self.record_dir = folder
        if self.output is not None:
            self._start_recording()

    def _start_recording(self) -> None:
        """Once the output exists (its rate is known); before any audio flows."""
        if self.record_dir is None or self.recorder is not None:
            return
        self.recorder = CallRecorder(
            self.record_dir, mic_rate=VAD_RATE, out_rate=self._output_rate(), out_clock_ms=self._output_clock()
        )
        self.secrets.recorder = self.recorder

    def _output_rate(self) -> int:
        """out.wav's rate: what the speaker played, or on a line what the caller heard."""
        return self.line.downlink.rate_out if self.line is not None else self.models.voice.sample_rate

    def _output_clock(self) -> Callable[[], float] | None:
        """For an output silent between prompts: the clock its recording runs on to."""
        return None

    def _finish_recordings(self) -> None:
        self.secrets.close()
        if self.recorder is not None:
            self.recorder.close()

    def write_recordings(self, folder: Path) -> None:
        """At stop: mic.wav and out.wav are complete on disk (they were written as the
        call ran, starting at session time 0, aligned to the journal). Nothing is
        written for a call that was never given a recording folder."""
        self._finish_recordings()

    # -- speaking ----------------------------------------------------------------------

    def speak(self, prompt: RequestPrompt) -> None:
        if self._answering is not None and not self._latency_of.get(prompt.token):
            self._latency_of[prompt.token] = self._answering  # asked for by the turn just heard
            self._answering = None
        self._texts[prompt.token] = prompt.text
        self.secrets.prompt(prompt.token, prompt.text)
        self._tts.submit(self._synthesize, prompt.token, prompt.text)

    def _synthesize(self, token: int, text: str) -> None:
        """Worker thread: one chunk per sentence, stopping between chunks when cancelled."""
        try:
            for chunk in self.models.voice.synthesize(text, cancelled=lambda: token in self._cancelled):
                if token not in self._lead_ms:  # the first chunk: how long until it is audible
                    onset = audible_onset(chunk, self.models.voice.sample_rate)
                    self._lead_ms[token] = 0.0 if onset is None else onset * 1000.0 / self.models.voice.sample_rate
                self.loop.call_soon_threadsafe(self.output.append, token, chunk)
        except Exception as exc:  # an edge failing is an event for the core, not a crash
            self.loop.call_soon_threadsafe(self._feed, PromptFailed(token, f"tts_error: {exc}"))
            return
        self.loop.call_soon_threadsafe(self.output.finish, token)

    def cancel(self, token: int) -> None:
        self._cancelled.add(token)
        self._latency_of.pop(token, None)  # an answer cut before it played has no latency
        if self.output is not None:
            self.output.interrupt(token)

    def play_preview(self, audio: np.ndarray, rate: int) -> None:
        """The prompt editor's spoken preview: played, but not a prompt of the call."""
        self._previews -= 1
        token = self._previews  # negative tokens are never the core's
        self.loop.call_soon_threadsafe(self.output.enqueue, token, audio)

    def on_output_event(self, kind: str, token: int, t_ms: float) -> None:
        """On the loop: the output's observation of a prompt (t_ms on the session clock)."""
        if token < 0:
            return  # a preview: the call never asked for it
        if self.session is not None:
            # the output's own time for it beside the journal's: the core hears of it when
            # the loop runs (later on a busy machine), the recording places it at t_ms
            self.session.note("playback_observed", {
                "token": token, "event": kind, "stream_ms": round(t_ms, 1),
                "lag_ms": round(self.session.now_ms() - t_ms, 1),
            })
        if kind == "started":
            self.secrets.prompt_started(token, t_ms)
            self.on_line("agent", self._texts.get(token, ""))
            latency = self._latency_of.pop(token, None)
            if latency is not None:
                latency.first_audio = t_ms
                latency.leading_silence_ms = self._lead_ms.get(token, 0.0)
                self._finish_latency(latency)
            self._lead_ms.pop(token, None)
            self._feed(PlaybackStarted(token))
        elif kind == "completed":
            self.secrets.prompt_ended(token, t_ms)
            if self.lose_next_completion:
                self.lose_next_completion = False
                return
            if self.delay_next_completion_ms:
                delay, self.delay_next_completion_ms = self.delay_next_completion_ms, 0.0
                self.loop.call_later(delay / 1000.0, self._feed, PlaybackCompleted(token))
                return
            self._feed(PlaybackCompleted(token))
        elif kind == "interrupted":
            self.secrets.prompt_ended(token, t_ms)
            self._feed(PlaybackInterrupted(token))

    def played(self, block: np.ndarray, rate: int) -> None:
        """On the loop, in hand-off order: a block the speaker wrote (silence included):
        the echo canceller's far end."""
        if self.echo is not None:
            self.echo.far(block, rate)

    # -- listening ----------------------------------------------------------------------

    def set_end_of_speech(self, ms: float | None) -> None:
        self._stage_hold = ms if ms is not None else self.default_end_of_speech_ms
        self._apply_hold()

    def _apply_hold(self) -> None:
        """The open turn's end-of-speech hold: the stage's, or a partial value's; and
        while a pause's words are being decoded, long enough for them to come."""
        if self.segmenter is None:
            return
        hold = max(self._stage_hold, self._partial_hold_ms) if self._hold_extended else self._stage_hold
        spec = self._spec
        if spec is not None and not spec.done and not spec.stale:
            hold = max(hold, WORDS_DUE_MS)
        self.segmenter.end_of_speech_ms = hold

    def on_frames(self, frames: np.ndarray, t_ms: float) -> None:
        """On the loop: 16 kHz mono microphone frames; t_ms on the session clock (first sample)."""
        if self.session is None or self.session.closed.is_set():
            return  # frames still in flight after the call ended
        agent_audible = self.echo.agent_audible if self.echo is not None else self.speaking
        if self.health is not None and not (self.input_report.failed and agent_audible):
            # while the input is down, sound heard as the agent speaks may be its own
            # voice (a monitor the stream fell back to): it is no evidence the mic is back
            self.health.observe(frames, t_ms)
        if self.line is not None:  # what the agent hears of the caller: the line's audio, its delay late
            frames = self.line.uplink.process(frames)
        if self.recorder is not None:
            self.recorder.mic(t_ms, frames.copy())  # what the microphone heard (on a line, what the line delivered)
        if self.echo is not None:
            frames, t_ms = self.echo.near(frames, t_ms)
            if not len(frames):
                return
        self._listen(frames, t_ms)

    def _listen(self, frames: np.ndarray, t_ms: float) -> None:
        far_p = self.echo.far_recent_power if self.echo is not None else 0.0
        evidence = self.gate.frame(power(frames), far_p)
        self._frames_end_ms = t_ms + len(frames) * 1000.0 / VAD_RATE
        for event in self.segmenter.feed(frames, t_ms):
            if event.kind == "speech_started":
                self._segment_started(event)
            elif event.kind == "speech_ended":
                self._segment_ended(event)
            elif event.kind == "pause_started":
                self._pause_started(event)
            elif event.kind == "speech_resumed" and self._spec is not None:
                self._spec.stale = True  # the caller went on: the pause was not the end
                self._spec = None
                self._apply_hold()
        seg = self._segment
        if evidence is None:  # the agent is not audible: what the VAD calls speech is the caller
            evidence = self.segmenter.last_probability >= self.segmenter.threshold
        self._evidence.append((t_ms, evidence))
        louder = self.room.louder_than_room(self.segmenter.level_dbfs)
        self._room_evidence.append((t_ms, bool(louder) and self.segmenter.last_probability >= self.segmenter.threshold))
        if seg is not None and seg.turn is None and seg.ignored is None:
            self._maybe_accept(seg, t_ms)
        elif seg is not None and seg.turn is not None and seg.room is None:
            if seg.room_suspect and self._caller_over_room_ended(seg, bool(louder)):
                return
            if self._frames_end_ms >= seg.next_check_ms:
                self._check_long_turn(seg)
        self.level_dbfs = self.segmenter.level_dbfs

    def _segment_started(self, event) -> None:
        seg = _Segment(start_ms=event.speech_start_ms)
        self._segment = seg
        if self.input_report.failed:
            seg.ignored = "input_failed"  # a monitor or a dead line: never the caller
            return
        # with no speaker the microphone can hear (no canceller, no meter), there is no echo
        seg.echo_suspect = self.echo is not None and self.echo.agent_audible
        # once the room's voices are known, speech is the caller's only above them
        seg.room_suspect = self.room.room_dbfs is not None
        if not seg.echo_suspect and not seg.room_suspect:
            self._accept(seg, event.t_ms)
        else:
            self._maybe_accept(seg, event.t_ms)

    def _maybe_accept(self, seg: _Segment, now_ms: float) -> None:
        if self.input_report.failed:
            seg.ignored = "input_failed"
            return
        since: list[float] = []
        if seg.echo_suspect:
            strong = [t for t, e in self._evidence if e]
            if len(strong) < BARGE_IN_EVIDENCE:
                return
            since.append(strong[0])
        if seg.room_suspect:
            louder = [t for t, loud in self._room_evidence if loud]
            if len(louder) < ROOM_EVIDENCE_FRAMES:
                return
            since.append(louder[0])
        self._accept(seg, now_ms, evidence_from=max(since))

    def _accept(self, seg: _Segment, now_ms: float, evidence_from: float | None = None) -> None:
        self._turns += 1
        seg.turn = (f"heard-{self._turns}", self._turns)
        seg.accepted_ms = evidence_from
        seg.next_check_ms = max(seg.start_ms, evidence_from or seg.start_ms) + self.room.turn_bound_ms
        if self.echo is not None:
            self.echo.caller_active = True
        self._feed(TurnStarted(*seg.turn))

    # -- slot-aware end of turn (V9) ---------------------------------------------------

    def _pending_slot(self):
        """(slot spec, slot's partial digits, complete_value_end_ms, partial_value_hold_ms)
        for the slot the pending question waits for, or None."""
        return pending_slot(getattr(self.session, "runtime", None))

    def _decode_options(self) -> dict:
        return options_for(self._pending_slot(), recogniser_context(getattr(self.session, "runtime", None)))

    def _pause_started(self, event) -> None:
        """On the loop: a pause began within a caller turn: decode what was said so far."""
        seg = self._segment
        if self._spec is not None:
            self._spec.stale = True
            self._spec = None
            self._apply_hold()
        if seg is None or seg.turn is None or self.input_report.failed or self._pending_slot() is None:
            return
        audio, _ = self._turn_audio(seg, event.audio, event.speech_start_ms)
        spec = self._spec = _Speculation(event.t_ms, seg.turn[0])
        self._stt.submit(self._speculate, spec, audio, self._decode_options())
        self._apply_hold()  # the pause's words are due: the hold waits for them

    def _speculate(self, spec: _Speculation, audio: np.ndarray, options: dict) -> None:
        """Worker thread: the speculative decode (skipped if the caller already went on)."""
        from voices.stt import RecognizerError

        if spec.stale:
            return
        try:
            # a pause the caller talked on through: its words are not wanted, and a
            # doubtful decode's further windows (up to the full one, ~1 s on a line)
            # would keep the next pause's words waiting behind them
            recognition = self.models.recognizer.transcribe(audio, abandon=lambda: spec.stale, **options)
        except RecognizerError:
            recognition = None  # the turn's own decode reports a failing recognizer
        if recognition is not None and recognition.reason == "abandoned":
            recognition = None  # if the turn ended meanwhile, its own decode runs (as for a failed one)
        self.loop.call_soon_threadsafe(self._speculated, spec, recognition)

    def _speculated(self, spec: _Speculation, recognition) -> None:
        """On the loop: the words at the pause's onset. End the turn, hold it open, or wait."""
        if spec.waiting is not None:  # the turn ended on its hold meanwhile: these are its words
            turn, seq, latency = spec.waiting
            if recognition is None:
                self._stt.submit(self._recognize, turn, seq, spec.audio_for_retry, latency, self._decode_options())
                return
            latency.speculative = True
            self._heard(turn, seq, recognition, latency)
            return
        spec.done = True
        spec.recognition = recognition
        if spec.stale or self._spec is not spec:
            return
        self._apply_hold()  # the words are in: the hold is the stage's (or a partial value's) again
        pending = self._pending_slot()
        if recognition is None or pending is None or not recognition.text:
            self._end_if_held_past(spec)
            return
        slot_spec, partial, end_ms, hold_ms = pending
        from ladder.flow.understanding.text import answer_progress
        from voices.understanding.interpret import TurnReading, read_words

        reading = read_words(self.matcher, recognition.text) if self.matcher is not None else TurnReading(None, 0.0, None)
        progress = answer_progress(slot_spec.type, recognition.text, min_length=slot_spec.min_length,
                                   max_length=slot_spec.max_length, partial=partial,
                                   answer_phrase=reading.intent == "answer", learned=reading.yes_no, intent=reading.intent)
        pause_ms = self._frames_end_ms - spec.onset_ms
        if progress == "complete":
            wait = max(0.0, end_ms - pause_ms)
            self._note_end_of_turn(spec, "end_now", "complete_value", pause_ms=round(max(pause_ms, end_ms), 1))
            if wait > 0:
                self.loop.call_later(wait / 1000.0, self._end_on_value, spec)
            else:
                self._end_on_value(spec)
        elif progress == "partial" and not self._hold_extended:
            self._hold_extended, self._partial_hold_ms = True, hold_ms
            self._apply_hold()
            self._note_end_of_turn(spec, "hold_open", "partial_value", hold_ms=self.segmenter.end_of_speech_ms)
        else:
            self._end_if_held_past(spec)

    def _end_if_held_past(self, spec: _Speculation) -> None:
        """The pause's words came after its hold ran out (a busy machine): the turn
        ends now, as it would have when the hold ran out."""
        if self.segmenter is None or self._segment is None:
            return
        if self._frames_end_ms - spec.onset_ms >= self.segmenter.end_of_speech_ms:
            event = self.segmenter.finish(self._frames_end_ms)
            if event is not None:
                self._segment_ended(event, end_of_turn="partial_value_hold" if self._hold_extended else "hold")

    def _end_on_value(self, spec: _Speculation) -> None:
        if spec.stale or self._spec is not spec or self._segment is None:
            return  # the caller went on, or the turn already ended
        event = self.segmenter.finish(self._frames_end_ms)
        if event is not None:
            self._segment_ended(event, end_of_turn="complete_value")

    def _note_end_of_turn(self, spec: _Speculation, decision: str, reason: str, **detail) -> None:
        if self.session is not None:
            self.session.note("end_of_turn", {"turn": spec.turn, "decision": decision, "reason": reason, **detail})

    def _turn_audio(self, seg: _Segment, audio: np.ndarray | None, speech_start_ms: float) -> tuple[np.ndarray, float]:
        """A turn's audio and the session ms of its first sample."""
        audio = audio if audio is not None else np.zeros(0, np.float32)
        audio_from = speech_start_ms - PRE_ROLL_MS
        if seg.accepted_ms is not None:
            # it began as the agent's own voice, or the room's: keep from a little before
            # the evidence (over the room, only a little: whisper reads the room's words
            # ahead of the caller's as the start of the turn, "3 years now" for "yes, that's right")
            lookback = BARGE_IN_LOOKBACK_MS if seg.echo_suspect else ROOM_LOOKBACK_MS
            keep_from = seg.accepted_ms - lookback
            drop = int(max(0.0, keep_from - audio_from) * VAD_RATE / 1000.0)
            drop = min(drop, max(0, len(audio) - VAD_RATE // 2))
            audio, audio_from = audio[drop:], audio_from + drop * 1000.0 / VAD_RATE
        if seg.room_suspect:  # over the room: whisper hears the caller's stretches, as the frameworks' STT does
            audio = gated_to_caller(audio, self.room)
        return audio, audio_from

    def _segment_ended(self, event, end_of_turn: str | None = None) -> None:
        seg, self._segment = self._segment, None
        spec, self._spec = self._spec, None
        extended, self._hold_extended, self._partial_hold_ms = self._hold_extended, False, 0.0
        if self.segmenter is not None:
            self.segmenter.end_of_speech_ms = self._stage_hold
        if self.echo is not None:
            self.echo.caller_active = False
        if seg is None:
            return
        if seg.turn is None:
            why = seg.ignored or ("echo" if seg.echo_suspect else "background_voices")
            if why == "echo":
                self.echo_rejected += 1
            if self.session is not None:
                self.session.note("speech_not_a_turn", {"from_ms": round(seg.start_ms, 1), "to_ms": round(event.t_ms, 1), "why": why})
            return
        turn, seq = seg.turn
        self._feed(TurnEnded(turn, seq))
        audio, audio_from = self._turn_audio(seg, event.audio, event.speech_start_ms)
        self.secrets.turn(turn, audio_from, event.t_ms)
        self._turn_level[turn] = speech_level_dbfs(audio)
        if seg.room is not None:  # judged the room's while it ran: no words to read
            self._room_turn(turn, seq, seg.room)
            return
        latency = TurnLatency(turn, event.t_ms, audio_s=len(audio) / VAD_RATE, vad_speech_end=event.speech_end_ms)
        latency.end_of_turn = end_of_turn or ("partial_value_hold" if extended else "hold")
        end = audible_end(audio, VAD_RATE)
        if end is not None and event.audio_end_ms is not None:
            # the last audible 5 ms of what the caller said: their speech ended there
            latency.speech_end = event.audio_end_ms - (len(audio) - end) * 1000.0 / VAD_RATE
        if spec is not None and spec.turn == turn and not spec.stale:
            # no speech since the pause began: its decode is this turn's (reused, not redone)
            if spec.recognition is not None:
                latency.speculative = True
                self.loop.call_soon(self._heard, turn, seq, spec.recognition, latency)
                return
            if not spec.done:
                spec.audio_for_retry = audio
                spec.waiting = (turn, seq, latency)
                return
        self._stt.submit(self._recognize, turn, seq, audio, latency, self._decode_options())

    def _recognize(self, turn: str, seq: int, audio: np.ndarray | None, latency: TurnLatency, options: dict | None = None) -> None:
        """Worker thread: whisper, then back to the loop with the words (or the failure)."""
        from voices.stt import RecognizerError

        try:
            recognition = self.models.recognizer.transcribe(audio if audio is not None else np.zeros(0, np.float32), **(options or {}))
        except RecognizerError as exc:
            self.loop.call_soon_threadsafe(self._feed, TransportFailed("recognizer", str(exc)[:120]))
            return
        self.loop.call_soon_threadsafe(self._heard, turn, seq, recognition, latency)

    # -- background voices (voices.background_voices) ------------------------------------

    def _is_reply(self, text: str, intent: str | None, *, at_bound: bool = False) -> bool:
        """Do the words hold something for the call: a value for the pending question
        (a code, a yes or no, a number), or what the intent reader recognised?"""
        return intent is not None or holds_value(getattr(self.session, "runtime", None), text, at_bound=at_bound)

    def _caller_over_room_ended(self, seg: _Segment, louder: bool) -> bool:
        """A caller turn over the room's voices: the VAD hears the room on after the
        caller stops, so the turn ends once the caller's frames (louder than the room)
        have stopped for the end-of-speech hold, its audio cut a pre-roll after them."""
        if louder:
            seg.last_loud_ms = self._frames_end_ms
            return False
        seg.last_loud_ms = max(seg.last_loud_ms, seg.accepted_ms or seg.start_ms)
        if self._frames_end_ms - seg.last_loud_ms < self.segmenter.end_of_speech_ms:
            return False
        event = self.segmenter.finish(self._frames_end_ms)
        if event is None or event.audio is None:
            return False
        cut_at = seg.last_loud_ms + PRE_ROLL_MS
        cut = max(0, int((event.audio_end_ms - cut_at) * VAD_RATE / 1000.0))
        audio = event.audio[: len(event.audio) - cut] if cut else event.audio
        event = SpeechEvent("speech_ended", event.t_ms, audio, speech_start_ms=event.speech_start_ms,
                            speech_end_ms=seg.last_loud_ms, audio_end_ms=event.audio_end_ms - cut * 1000.0 / VAD_RATE)
        self._segment_ended(event, end_of_turn="caller_over_room")
        return True

    def _check_long_turn(self, seg: _Segment) -> None:
        """A caller turn still open after the bound: decode it so far; no reply in it, and
        it is the room talking, not the caller (a television holds a turn open for as
        long as the programme runs, and the ladder with it)."""
        seg.next_check_ms = self._frames_end_ms + self.room.turn_bound_ms
        audio = self.segmenter.audio_so_far()
        self._stt.submit(self._decode_long_turn, seg, audio)

    def _decode_long_turn(self, seg: _Segment, audio: np.ndarray) -> None:
        """Worker thread."""
        from voices.stt import RecognizerError

        if self._segment is not seg:
            return  # it ended meanwhile
        try:
            recognition = self.models.recognizer.transcribe(audio)
        except RecognizerError:
            return  # the turn's own decode reports a failing recognizer
        self.loop.call_soon_threadsafe(self._long_turn_decoded, seg, recognition, speech_level_dbfs(audio))

    def _long_turn_decoded(self, seg: _Segment, recognition, level: float | None) -> None:
        if self._segment is not seg or seg.turn is None or self.segmenter is None:
            return
        intent = self.matcher.match(recognition.text)[0] if self.matcher is not None and recognition.text else None
        verdict = self.room.judge(recognition.text, recognition.raw_text, level,
                                  reply=self._is_reply(recognition.text, intent, at_bound=True), at_bound=True)
        if verdict is None:
            return  # words for the call: the turn runs on, and is checked again a bound later
        seg.room = verdict
        event = self.segmenter.finish(self._frames_end_ms)
        if event is not None:
            self._segment_ended(event, end_of_turn="background_voices")

    def _room_turn(self, turn: str, seq: int, verdict) -> None:
        """A turn judged the room's: no usable words (the flow reads it as noise, L8)."""
        level = self._turn_level.pop(turn, None)
        self.room.learn_room(verdict.level_dbfs if verdict.level_dbfs is not None else level)
        if self.session is not None:
            self.session.note("background_voices", {"turn": turn, **verdict.as_dict(), "room_dbfs": round(self.room.room_dbfs, 1) if self.room.room_dbfs is not None else None})
        self.on_line("caller", f"(background voices: {verdict.reason.replace('_', ' ')})")
        self._feed(CallerUtterance(turn, seq, "", None, 0.0, f"background_voices:{verdict.reason}"))

    def _heard(self, turn: str, seq: int, recognition, latency: TurnLatency) -> None:
        assert self.session is not None
        latency.transcript = self.session.now_ms()
        latency.stt_s = recognition.decode_s
        text = recognition.text
        from voices.understanding.interpret import TurnReading, read_words

        reading = read_words(self.matcher, text) if text else TurnReading(None, 0.0, None)
        intent = reading.intent
        level = self._turn_level.get(turn)
        reply = self._is_reply(text, intent)
        verdict = self.room.judge(text, recognition.raw_text, level, reply=reply)
        if verdict is not None:
            self.secrets.heard(turn, text)  # a room misjudged may still have said a value
            self._room_turn(turn, seq, verdict)
            return
        self._turn_level.pop(turn, None)
        if reply:
            self.room.learn_caller(level)
        self.on_line("caller", text or f"({recognition.reason})")
        self.secrets.heard(turn, text)
        self._answering = latency
        try:
            self._feed(CallerUtterance(turn, seq, text, intent, reading.score, recognition.reason, reading.reader,
                                       reading.yes_no, reading.yes_no_score))
        finally:
            answered, self._answering = self._answering is None, None
        latency.decision = self.session.now_ms()
        if not answered:
            self.unanswered_turns += 1  # no prompt answers it: no latency to measure

    def _finish_latency(self, latency: TurnLatency) -> None:
        if self.line is not None:  # the caller's wait is the agent's, and the line's both ways
            latency.line_ms = self.line.round_trip_ms
        self.latencies.append(latency)
        if self.session is not None:
            self.session.note("turn_latency", latency.as_dict())

    def say(self, text: str) -> None:
        """A typed caller turn, beside the spoken ones (useful to steer a rehearsal)."""
        self.typed.say(self.matcher, text, heard=lambda: self.on_line("caller", text))

    def after_typed_turns(self, callback: Callable[[], None]) -> bool:
        """`callback` after the turns typed so far (see TypedTurns.after)."""
        return self.typed.after(self.matcher, callback)

    @property
    def speaking(self) -> bool:
        if self.output is None:
            return False
        return not self.output.idle

    # -- health ----------------------------------------------------------------------------

    def check_health(self) -> None:
        if self.health is None or self.session is None:
            return
        reason = self.health.check(self.session.now_ms())
        event = self.input_report.verdict(reason, self.session.runtime.ladder.state)
        if isinstance(event, TransportFailed):
            self._drop_open_segment("input_failed")
        if event is not None:
            self._feed(event)

    def _drop_open_segment(self, why: str) -> None:
        """The input failed mid-segment: what it heard is no caller turn (a turn already
        opened is left to end as it will: its words are still recognised)."""
        seg = self._segment
        if seg is not None and seg.turn is None:
            seg.ignored = why

    def media_line(self) -> str:
        health = "healthy" if self.health is None or self.health.healthy else "INPUT DEAD"
        bars = max(0, min(20, int((self.level_dbfs + 80) / 4)))
        line = f"{self.name} backend  mic {'▮' * bars}{'·' * (20 - bars)} {self.level_dbfs:5.0f} dBFS  input {health}"
        if self.echo is not None:
            line += f"  {self.echo.describe()}"
        if self.line is not None:
            line += f"  {self.line.media_text()}"
        if self.secrets.keep:
            line += "  SECRET AUDIO KEPT"
        return line

    def echo_figures(self) -> dict:
        """For journals and benches: the echo path as measured in this call."""
        figures = {"aec": bool(self.echo is not None and self.echo.enabled), "rejected_segments": self.echo_rejected,
                   "gate_coupling_db": self.gate.coupling_db}
        if self.echo is not None:
            figures.update(self.echo.meter.as_dict())
        return figures

    # -- helpers --------------------------------------------------------------------------

    def _feed(self, event) -> None:
        if self.session is not None and not self.session.closed.is_set():
            self.session.feed(event)

    async def close(self) -> None:
        self._tts.shutdown(wait=False, cancel_futures=True)
        self._stt.shutdown(wait=False, cancel_futures=True)
        if self.output is not None:
            self.output.close()
        if self.session is not None and self.echo is not None and not self.session.closed.is_set():
            self.session.note("echo_path", self.echo_figures())
        if self.line is not None and self.session is not None and not self.session.closed.is_set():
            self.session.note("phone_line", self.line.figures())
        self._finish_recordings()  # the streams are stopped: nothing more to record
