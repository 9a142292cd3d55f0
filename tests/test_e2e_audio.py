"""End to end through real audio: the default flow on a private PulseAudio server.

The agent speaks through piper into the virtual speaker; the caller's words are played
into the virtual microphone; the core hears them through Silero VAD and whisper. The
assertions read the journal and the speaker's own recording (transcribed), never log
text. Outside CI these skip when PulseAudio is missing; in CI they must run.
"""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
import soundfile

from call_clock import heard_seconds, until
from sessions.flowfiles import check_data, library_flow_path
from sessions.journal import read_journal


@pytest.fixture(scope="module")
def models(loaded_models):
    return loaded_models  # loaded once for the run (conftest)


def default_flow(**ladder):
    data = json.loads(library_flow_path("reference_code").read_text())
    data["ladder"] = ladder
    report = check_data(data, "reference_code")
    assert report.flow is not None
    return report.flow


def early_question_flow(**ladder):
    """The default flow without its disclosure: the first question begins about 2.6 s
    into the call, after only the greeting."""
    data = json.loads(library_flow_path("reference_code").read_text())
    data["stages"] = [s for s in data["stages"] if s["id"] != "disclosure"]
    for stage in data["stages"]:
        if stage.get("next") == "disclosure":
            stage["next"] = "ask_code"
    if ladder:
        data["ladder"] = ladder
    report = check_data(data, "reference_code")
    assert report.flow is not None
    return report.flow


def caller_wav(models, tmp_path, name, text):
    from voices.stt import resample

    audio = models.voice.synthesize_all(text)
    audio = resample(audio, models.voice.sample_rate, 16000)
    audio = np.concatenate([np.zeros(1600, np.float32), audio * 0.8, np.zeros(3200, np.float32)])
    path = tmp_path / f"{name}.wav"
    soundfile.write(path, audio, 16000)
    return path


class Call:
    """A headless live call on the lab's devices, driven by the test."""

    def __init__(self, lab, models, flow, folder, **backend_options):
        from sessions.live import LiveSession
        from voices.backends import AudioBackend
        from voices.audio import resolve_device

        self.lab = lab
        self.backend = AudioBackend(
            models,
            input_device=resolve_device("test_mic", "input"),
            output_device=resolve_device("test_speaker", "output"),
            record_dir=folder,
            **backend_options,
        )
        self.session = LiveSession(flow, self.backend, journal_dir=folder)
        self.folder = folder
        self.stream: list[str] = []  # the event stream, for a failure message

        from console.describe import describe

        def keep(now, kind, record):
            text = describe(record)
            if text:
                self.stream.append(f"{now / 1000:7.2f} {text}")

        self.session.listeners.append(keep)

    def spoken(self, kind):
        prompts = self.session.runtime.ladder.prompts.values()
        return [p for p in prompts if p.kind == kind and p.status.value == "completed"]

    async def until(self, predicate, limit_s=40.0):
        """Wait for `predicate`, at most `limit_s` of the microphone audio the call took in."""
        await until(predicate, limit_s, heard_seconds(self.backend), why=self.last_events)

    def last_events(self) -> str:
        tail = "\n".join(self.stream[-25:])
        return f"ladder state {self.session.runtime.ladder.state.value}; last events:\n{tail}"

    async def question_asked(self, stage):
        runtime = self.session.runtime
        await self.until(
            lambda: runtime.asking == ("main", stage)
            and runtime.ladder.state.value == "listening"
        )
        await asyncio.sleep(0.3)

    async def say(self, wav):
        await asyncio.to_thread(self.lab.play_into_mic, wav, True)


def transcript_of(path):
    from voices.stt import WhisperRecognizer, load_wav_16k

    return WhisperRecognizer().transcribe(load_wav_16k(path)).text.lower()


def observations(folder, kind):
    return [r for r in read_journal(folder).decisions() if r.get("effect") == "Observation" and r.get("kind") == kind]


def carries_code(text: str, code: str) -> bool:
    """Is the code in these words, in any spelling the digit parser reads?"""
    from ladder.flow.understanding.text import parse_digits

    digits = parse_digits(text) or ""
    return code in digits.replace(" ", "") or code in text.replace(" ", "")


def journal_effects(folder, effect):
    return [r for r in read_journal(folder).decisions() if r.get("effect") == effect]


def run(call, scenario):
    """Run a scenario; whatever happens, stop the call in its own loop, closing the streams
    (a stream left open would keep calling back into a dead loop during later tests)."""

    async def guarded():
        try:
            # the scenario's limits are on the call's audio clock (Call.until); this only
            # stops a test that hangs where no clock is read
            await asyncio.wait_for(scenario(), timeout=600)
        finally:
            await call.session.stop()

    asyncio.run(guarded())


def says(heard: str, phrase: str, at_least: float = 0.75) -> bool:
    """Did the recording say `phrase`? Word-level similarity over a sliding window, so
    tiny.en's small slips ("carry it on") do not fail a test about the agent's words."""
    from ladder.flow.understanding.text import word_similarity, words

    said, n = words(heard), len(words(phrase))
    return any(
        word_similarity(" ".join(said[i : i + size]), phrase) >= at_least
        for size in (n - 1, n, n + 1)
        for i in range(max(1, len(said) - size + 1))
    )


def test_the_caller_answers_the_reference_code(pulse_lab, models, tmp_path):
    floor = pulse_lab.noise_floor()
    capture = pulse_lab.start_capture(tmp_path / "speaker.wav")
    call = Call(pulse_lab, models, default_flow(), tmp_path / "take")
    # a few words before the digits, as callers say them: a clipped first syllable then
    # costs a word, not a digit
    code = caller_wav(models, tmp_path, "code", "my code is four eight two one")
    yes = caller_wav(models, tmp_path, "yes", "yes, that's right")

    async def scenario():
        await call.session.start()
        await call.question_asked("ask_code")
        await call.say(code)
        await call.question_asked("confirm_code")
        await call.say(yes)
        await call.until(call.session.closed.is_set, 40)

    try:
        run(call, scenario)
    finally:
        floor.stop()
        capture.stop()
    assert call.session.runtime.state["reference_code"] == "4821"
    assert call.session.runtime.ladder.outcome == "completed"
    filled = journal_effects(tmp_path / "take", "SlotFilled")
    assert [(r["slot"], r["value"]) for r in filled] == [("reference_code", "[redacted]"), ("code_confirmed", True)]
    assert (tmp_path / "take" / "mic.wav").exists() and (tmp_path / "take" / "out.wav").exists()
    heard = transcript_of(tmp_path / "speaker.wav")
    for phrase in ("this is the reference desk", "recorded for quality and training", "what is your reference code", "is that right", "nothing else has been changed"):
        assert says(heard, phrase), (phrase, heard)
    # the journal redacts the code: the recordings beside it keep that promise
    masked = observations(tmp_path / "take", "audio_masked")
    assert {m["track"] for m in masked} == {"mic", "out"}, masked
    for name in ("mic.wav", "out.wav"):
        assert not carries_code(transcript_of(tmp_path / "take" / name), "4821"), name
    latencies = [r for r in read_journal(tmp_path / "take").decisions() if r.get("effect") == "Observation" and r.get("kind") == "turn_latency"]
    assert len(latencies) >= 2 and all(r["eos_to_first_audio_ms"] is not None for r in latencies)
    from sessions.replay import replay

    result = replay(tmp_path / "take")  # the real-audio session replays through the core
    assert result.verdict == "CLEAN", result.describe()


def test_give_me_a_moment_is_acknowledged_once_then_answered(pulse_lab, models, tmp_path):
    floor = pulse_lab.noise_floor()
    capture = pulse_lab.start_capture(tmp_path / "speaker.wav")
    call = Call(pulse_lab, models, default_flow(), tmp_path / "take")
    moment = caller_wav(models, tmp_path, "moment", "give me a moment")
    code = caller_wav(models, tmp_path, "code", "okay, it is four eight two one")

    async def scenario():
        await call.session.start()
        await call.question_asked("ask_code")
        await call.say(moment)
        await call.until(lambda: call.spoken("acknowledgement"))
        await asyncio.sleep(1.5)
        await call.say(code)
        await call.question_asked("confirm_code")
        await call.session.stop()

    try:
        run(call, scenario)
    finally:
        floor.stop()
        capture.stop()
    assert len(call.spoken("acknowledgement")) == 1
    assert call.session.runtime.state["reference_code"] == "4821"
    episodes = journal_effects(tmp_path / "take", "EpisodeEnded")
    assert episodes[0]["outcome"] == "explicit_wait"
    heard = transcript_of(tmp_path / "speaker.wav")
    assert heard.count("take your time") == 1, heard  # one acknowledgement, no reminder


def test_silence_walks_the_ladder_to_a_safe_close(pulse_lab, models, tmp_path):
    floor = pulse_lab.noise_floor()
    capture = pulse_lab.start_capture(tmp_path / "speaker.wav")
    stages = [
        {"name": "quiet_wait", "wait_ms": 1500},
        {"name": "gentle_check", "wait_ms": 1500, "prompt": "Take your time. Would you like more time?"},
        {"name": "alternative_route", "wait_ms": 1500, "prompt": "We can carry on without the code.", "routes": ["continue_without_code"]},
        {"name": "safe_close", "wait_ms": 500, "prompt": "Nothing has been changed. Goodbye.", "closes": True},
    ]
    call = Call(pulse_lab, models, default_flow(stages=stages), tmp_path / "take")

    async def scenario():
        await call.session.start()
        await call.until(call.session.closed.is_set, 60)

    try:
        run(call, scenario)
    finally:
        floor.stop()
        capture.stop()
    assert call.session.runtime.ladder.outcome == "closed_incomplete"
    closed = journal_effects(tmp_path / "take", "SessionClosed")
    assert closed[0]["outcome"] == "closed_incomplete"
    heard = transcript_of(tmp_path / "speaker.wav")
    for phrase in ("would you like more time", "we can carry on without the code", "nothing has been changed goodbye"):
        assert says(heard, phrase), (phrase, heard)


def test_the_input_device_disappears_and_the_call_ends_in_channel_recovery(pulse_lab, models, tmp_path):
    floor = pulse_lab.noise_floor()
    capture = pulse_lab.start_capture(tmp_path / "speaker.wav")
    call = Call(pulse_lab, models, default_flow(recovery_ms=2500), tmp_path / "take")

    async def scenario():
        await call.session.start()
        await call.question_asked("ask_code")
        # when the mic goes, PulseAudio moves the stream to the default source: make that
        # a silent one, so the stream delivers what a dead device does (digital zeros)
        floor.stop()
        pulse_lab.pactl("set-default-source", "micfeed.monitor")
        pulse_lab.unload_mic()
        await call.until(call.session.closed.is_set, 40)

    try:
        run(call, scenario)
    finally:
        capture.stop()
        pulse_lab.restore_mic()
        pulse_lab.pactl("set-default-source", "mic")
    journal = read_journal(tmp_path / "take")
    assert journal.skipped == [], journal.report()
    failed = [r["event"] for r in journal.inputs() if r["kind"] == "transport_failed"]
    # the audio server says the stream moved (or, without one, the zeros say it is dead)
    assert failed and failed[0]["path"] == "input"
    assert failed[0]["reason"].startswith("device_moved: mic -> ") or failed[0]["reason"] == "digital_zeros", failed
    closed = [r for r in journal.decisions() if r.get("effect") == "SessionClosed"]
    assert closed[0]["outcome"] == "input_path_failed"
    assert call.session.runtime.state.get("reference_code") is None
    heard = transcript_of(tmp_path / "speaker.wav")
    assert says(heard, "having trouble with the line") and says(heard, "what is your reference code"), heard
    assert "take your time" not in heard  # no reminder re-asks into a dead channel


# -- the echo path: a laptop's microphone hears its own speakers (V8) ---------------------


SHORT_LADDER = [
    {"name": "quiet_wait", "wait_ms": 1500},
    {"name": "gentle_check", "wait_ms": 1500, "prompt": "Take your time. Would you like more time?"},
    {"name": "alternative_route", "wait_ms": 1500, "prompt": "We can carry on without the code.", "routes": ["continue_without_code"]},
    {"name": "safe_close", "wait_ms": 500, "prompt": "Nothing has been changed. Goodbye.", "closes": True},
]


def inputs_of(folder, kind):
    return [r for r in read_journal(folder).inputs() if r["kind"] == kind]


def test_with_the_echo_path_a_silent_caller_is_never_heard_and_no_prompt_is_cut(pulse_lab, models, tmp_path):
    floor = pulse_lab.noise_floor()
    capture = pulse_lab.start_capture(tmp_path / "speaker.wav")
    call = Call(pulse_lab, models, default_flow(stages=SHORT_LADDER), tmp_path / "take")

    async def scenario():
        await call.session.start()
        await call.until(call.session.closed.is_set, 60)

    try:
        with pulse_lab.echo_path():
            run(call, scenario)
    finally:
        floor.stop()
        capture.stop()
    take = tmp_path / "take"
    stream = "\n".join(call.stream[-30:])
    assert inputs_of(take, "turn_started") == [] and inputs_of(take, "utterance") == [], stream
    statuses = [p.status.value for p in call.session.runtime.ladder.prompts.values()]
    assert "interrupted" not in statuses and "cancelled_before_playback" not in statuses, (statuses, stream)
    assert call.session.runtime.ladder.outcome == "closed_incomplete"
    echo = observations(take, "echo_path")[-1]
    assert echo["aec"] is True and echo["erl_db"] is not None and echo["erle_db"] > 10, echo
    print(f"\necho path: {echo}")  # the figures, for the run's log
    heard = transcript_of(tmp_path / "speaker.wav")
    for phrase in ("what is your reference code", "would you like more time", "nothing has been changed goodbye"):
        assert says(heard, phrase), (phrase, heard)


def test_with_the_echo_path_a_caller_talking_over_the_question_cuts_it_and_is_captured(pulse_lab, models, tmp_path):
    floor = pulse_lab.noise_floor()
    capture = pulse_lab.start_capture(tmp_path / "speaker.wav")
    call = Call(pulse_lab, models, default_flow(), tmp_path / "take")
    code = caller_wav(models, tmp_path, "code", "my code is four eight two one")
    marks = {}

    def question():
        return next((p for p in call.session.runtime.ladder.prompts.values() if p.kind == "question"), None)

    async def scenario():
        await call.session.start()
        await call.until(lambda: question() is not None and question().status.value == "started")
        await asyncio.sleep(0.3)  # well inside the question
        marks["talk"] = call.session.now_ms()
        await call.say(code)
        await call.question_asked("confirm_code")
        marks["confirm"] = call.session.now_ms()

    try:
        with pulse_lab.echo_path():
            run(call, scenario)
    finally:
        floor.stop()
        capture.stop()
    take = tmp_path / "take"
    stream = "\n".join(call.stream[-30:])
    assert question().status.value == "interrupted", stream
    assert call.session.runtime.state.get("reference_code") == "4821", stream
    # cut at once: the core asked, the speaker confirmed, once, within a second of talking
    interrupted = inputs_of(take, "playback_interrupted")
    assert len(interrupted) == 1 and interrupted[0]["event"]["token"] == question().token, interrupted
    assert interrupted[0]["t_ms"] - marks["talk"] < 1500, (interrupted[0]["t_ms"], marks)


def test_with_the_echo_path_a_caller_talking_from_the_first_questions_start_is_heard(pulse_lab, models, tmp_path):
    """The first question 2.6 s into the call, after only the greeting; the caller starts
    "my code is ..." as the core asks it. The echo gate's bar is the canceller's residue
    over the greeting, not a bar still coming down from the agent's own level (which
    heard them only once the question was over, their first words lost)."""
    floor = pulse_lab.noise_floor()
    call = Call(pulse_lab, models, early_question_flow(stages=SHORT_LADDER), tmp_path / "take")
    code = caller_wav(models, tmp_path, "code", "my code is four eight two one")
    clock = heard_seconds(call.backend)
    marks = {}

    def question():
        return next((p for p in call.session.runtime.ladder.prompts.values() if p.kind == "question"), None)

    async def scenario():
        await call.session.start()
        await call.until(lambda: question() is not None)
        marks["talk"] = clock()
        talking = asyncio.ensure_future(call.say(code))
        await call.until(lambda: question().status.value in ("interrupted", "completed"), 10)
        marks["cut"] = clock()
        await talking
        await call.until(lambda: call.session.runtime.asking == ("main", "confirm_code"), 20)

    try:
        with pulse_lab.echo_path(volume_percent=40):
            run(call, scenario)
    finally:
        floor.stop()
    stream = "\n".join(call.stream[-30:])
    assert question().status.value == "interrupted", stream
    # the gate is what is tested: the caller heard from the question's start, their code
    # in what was captured (whisper once heard the cut question's last sound as a leading
    # "0": "04821")
    assert "4821" in str(call.session.runtime.state.get("reference_code") or ""), stream
    take = tmp_path / "take"
    # cut while their first words were still coming (the question lasts ~1.5 s; the
    # bar coming down from 0 dB cut it, when at all, 1.1 s or more after they began)
    assert marks["cut"] - marks["talk"] < 1.0, (marks, stream)
    assert len(inputs_of(take, "playback_interrupted")) == 1, stream


def test_an_unplugged_mic_falling_back_to_the_agents_own_output_is_never_the_caller(pulse_lab, models, tmp_path):
    """With echo cancellation off, PulseAudio moves the stream to the monitor of the
    agent's own speaker: the agent then hears itself say it is having trouble."""
    floor = pulse_lab.noise_floor()
    capture = pulse_lab.start_capture(tmp_path / "speaker.wav")
    call = Call(pulse_lab, models, default_flow(recovery_ms=2500), tmp_path / "take", aec=False)

    async def scenario():
        await call.session.start()
        await call.question_asked("ask_code")
        floor.stop()
        pulse_lab.pactl("set-default-source", "speaker.monitor")
        pulse_lab.unload_mic()
        await call.until(call.session.closed.is_set, 40)

    try:
        run(call, scenario)
    finally:
        capture.stop()
        pulse_lab.restore_mic()
        pulse_lab.pactl("set-default-source", "mic")
    take = tmp_path / "take"
    stream = "\n".join(call.stream[-30:])
    failed = [r["event"] for r in inputs_of(take, "transport_failed")]
    assert failed and failed[0]["path"] == "input", stream
    assert inputs_of(take, "utterance") == [] and inputs_of(take, "turn_started") == [], stream
    assert call.session.runtime.ladder.outcome == "input_path_failed", stream
    heard = transcript_of(tmp_path / "speaker.wav")
    assert says(heard, "having trouble with the line"), heard
