"""The voice backend's plumbing with fake models: failures become core events, not crashes."""

import asyncio
import time

import numpy as np
from console_fixtures import compile_data, quick_flow_data

from sessions.live import LiveSession
from voices.backends import FileSpeaker, VoiceBackend, VoiceModels
from voices.stt import Recognition, RecognizerError


class FakeVoice:
    sample_rate = 16000

    def __init__(self, fail=False):
        self.fail = fail
        self.chunks_made = 0

    def synthesize(self, text, cancelled=lambda: False):
        if self.fail:
            raise RuntimeError("voice exploded")
        for _ in text.split(". "):
            if cancelled():
                return
            self.chunks_made += 1
            yield np.zeros(1600, np.float32)  # 0.1 s a sentence


class FakeRecognizer:
    def __init__(self, results):
        self.results = list(results)

    def transcribe(self, audio, **options):
        result = self.results.pop(0)
        if isinstance(result, Exception):
            raise result
        return result


def recognition(text, reason=None):
    return Recognition(text=text, reason=reason, audio_s=1.0, decode_s=0.3, language_probability=1.0)


async def start(backend):
    session = LiveSession(compile_data(quick_flow_data()), backend)
    records = []
    session.listeners.append(lambda now, kind, r: records.append(r))
    await session.start()
    backend.output = FileSpeaker(samplerate=16000, on_event=backend.on_output_event, clock_ms=session.now_ms)
    return session, records


def test_an_empty_recognition_is_no_usable_input_not_an_answer():
    async def body():
        backend = VoiceBackend(VoiceModels(FakeVoice(), FakeRecognizer([recognition("", "recognizer_empty")]), matcher_kind="lexical"), name="fake")
        session, records = await start(backend)
        backend._recognize("heard-1", 1, np.zeros(1600, np.float32), _latency())
        await asyncio.sleep(0.05)
        utterances = [r for r in records if r.get("kind") == "utterance"]
        assert utterances and utterances[-1]["reason"] == "no_usable_input:recognizer_empty"
        assert session.runtime.state.get("reference_code") is None
        await session.stop()

    asyncio.run(body())


def test_a_recognizer_error_is_a_recognizer_failure_for_channel_recovery():
    async def body():
        backend = VoiceBackend(VoiceModels(FakeVoice(), FakeRecognizer([RecognizerError("decoder crashed")]), matcher_kind="lexical"), name="fake")
        session, records = await start(backend)
        backend._recognize("heard-1", 1, np.zeros(1600, np.float32), _latency())
        await asyncio.sleep(0.05)
        assert session.runtime.ladder.state.value == "recovering"
        failed = [r for r in records if r.get("effect") == "Trace" and r.get("kind") == "transport_failed"]
        assert failed and failed[0]["path"] == "recognizer" and "decoder crashed" in failed[0]["reason"]
        await session.stop()

    asyncio.run(body())


def test_a_voice_that_fails_reports_the_prompt_failed():
    async def body():
        backend = VoiceBackend(VoiceModels(FakeVoice(fail=True), FakeRecognizer([]), matcher_kind="lexical"), name="fake")
        session, records = await start(backend)
        await asyncio.sleep(0.3)  # the greeting is synthesized in the worker and fails
        failed = [r for r in records if r.get("effect") == "Trace" and r.get("kind") == "prompt_failed"]
        assert failed and failed[0]["reason"].startswith("tts_error: voice exploded")
        await session.stop()

    asyncio.run(body())


def test_speech_and_playback_flow_through_to_the_core():
    async def body():
        voice = FakeVoice()
        backend = VoiceBackend(VoiceModels(voice, FakeRecognizer([]), matcher_kind="lexical"), name="fake")
        session, records = await start(backend)
        await asyncio.sleep(1.5)  # greeting and disclosure play (0.1 s a sentence + pad)
        kinds = [r.get("kind") for r in records]
        assert "prompt_started" in kinds and "prompt_completed" in kinds
        assert voice.chunks_made >= 2
        await session.stop()

    asyncio.run(body())


def _latency():
    from voices.backends.voice import TurnLatency

    return TurnLatency("heard-1", 0.0)


def test_speaking_is_true_while_audio_is_queued_and_false_after():
    async def body():
        backend = VoiceBackend(VoiceModels(FakeVoice(), FakeRecognizer([]), matcher_kind="lexical"), name="fake")
        # the output alone (a started call would queue its greeting behind the preview)
        backend.output = FileSpeaker(samplerate=16000, on_event=lambda *a: None, clock_ms=lambda: time.monotonic() * 1000)
        assert not backend.speaking  # piped caller lines wait on this
        backend.output.enqueue(-1, np.zeros(1600, np.float32))
        assert backend.speaking
        deadline = time.monotonic() + 5
        while backend.speaking and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert not backend.speaking  # 0.1 s of audio plus the 150 ms pad, then idle
        backend.output.close()

    asyncio.run(body())


def _caller(tmp_path):
    import soundfile

    path = tmp_path / "caller.wav"
    soundfile.write(path, np.zeros(16000, np.float32), 16000)
    return path


def test_recordings_open_from_either_hook_and_stay_on_one_folder(tmp_path):
    """live.py hands the journal folder to `open_recordings` at start; a backend made
    with a record_dir records there, and either way one call records into one folder."""
    import pytest
    import soundfile

    from voices.backends import FileBackend

    def models():
        return VoiceModels(FakeVoice(), FakeRecognizer([]), matcher_kind="lexical")

    async def body(backend, folder, hook):
        session = LiveSession(compile_data(quick_flow_data()), backend, journal_dir=folder)
        if hook:
            backend.open_recordings(folder)  # what live.py would call before backend.start()
        await session.start()
        started = session.now_ms()
        await asyncio.sleep(1.0)
        # the session's clock, not the sleep's promise: the slept second, and the whole call
        slept, whole = (session.now_ms() - started) / 1000.0, session.now_ms() / 1000.0
        await session.stop()
        return slept, whole

    for hook, record_dir in ((True, None), (False, "take"), (True, "take")):
        folder = tmp_path / f"{hook}-{record_dir}" / "take"
        backend = FileBackend(models(), _caller(tmp_path), record_dir=folder if record_dir else None)
        slept, whole = asyncio.run(body(backend, folder, hook))
        mic, out = soundfile.info(folder / "mic.wav"), soundfile.info(folder / "out.wav")
        # the microphone recorded the call as long as the call's clock says it ran (a loaded
        # machine makes a 1 s sleep longer: the recording follows the clock, not the sleep),
        # less at most the frame not yet heard when it stopped
        assert slept - 0.1 < mic.duration < whole + 0.05 and out.frames > 0, (hook, record_dir, mic.duration, slept, whole)
        with pytest.raises(ValueError, match="already records"):
            backend.open_recordings(tmp_path / "elsewhere")

    # the live session hands its journal folder to the backend: a journal always has audio
    backend = FileBackend(models(), _caller(tmp_path))
    asyncio.run(body(backend, tmp_path / "journal-only", hook=False))
    assert sorted(p.name for p in (tmp_path / "journal-only").iterdir()) == ["journal.jsonl", "mic.wav", "out.wav"]


def test_a_restarted_call_gets_a_new_file_backend_on_the_loaded_models(tmp_path, monkeypatch):
    # the console's restart (ctrl+r) asks the CLI for another backend: same caller
    # file, same models, no second load
    from console.cli import rehearse
    from voices.backends.file import FileBackend

    def no_second_load(**kwargs):
        raise AssertionError("the models were loaded again")

    monkeypatch.setattr(VoiceModels, "load", no_second_load)
    models = VoiceModels(FakeVoice(), FakeRecognizer([]), matcher_kind="lexical")
    caller = _caller(tmp_path)
    first = rehearse._make_backend("file", caller, None, None, None, None, None, models=models)
    again = rehearse._make_backend("file", caller, None, None, None, None, None, models=first.models)
    assert isinstance(again, FileBackend) and again is not first and again.models is models


def test_without_minilm_the_voice_backend_matches_with_wordllama_and_says_so(monkeypatch):
    import voices.understanding.interpret as interpret

    def missing():
        raise interpret.InterpreterError("cannot load the MiniLM model offline: not installed")

    monkeypatch.setattr(interpret, "load_minilm", missing)

    async def body():
        backend = VoiceBackend(VoiceModels(FakeVoice(), FakeRecognizer([]), matcher_kind="blend"), name="fake")
        session, records = await start(backend)
        assert isinstance(backend.matcher, interpret.EmbeddingMatcher)
        assert backend.matcher.match("can I speak to a real person")[0] == "route:transfer"
        notes = [r for r in records if r.get("kind") == "intent_matcher"]
        assert notes and notes[0]["asked"] == "blend" and notes[0]["using"] == "embedding"
        await session.stop()

    asyncio.run(body())


class ScriptedHealth:
    """The input health monitor's verdicts, one a check (None: nothing new)."""

    healthy = True

    def __init__(self, verdicts):
        self.verdicts = list(verdicts)

    def check(self, now_ms):
        return self.verdicts.pop(0) if self.verdicts else None


def test_a_repair_injected_while_the_mic_is_still_dead_is_followed_by_the_failure_again():
    """The microphone died (digital zeros); the designer injects "/recover input" from the
    console while it is still dead. The core must not then take the dead mic's silence as
    the caller's (L9): the backend tells it again that the input has failed. When the mic
    comes back, the core, recovering, is told; a recovery nobody waits for is not sent
    (it was rejected as stale)."""
    from ladder import TransportRecovered
    from ladder.states import State

    async def body():
        backend = VoiceBackend(VoiceModels(FakeVoice(), FakeRecognizer([]), matcher_kind="lexical"), name="fake")
        session, records = await start(backend)
        await asyncio.sleep(0.5)
        backend.health = ScriptedHealth(["digital_zeros", None])
        backend.check_health()
        assert session.runtime.ladder.state is State.RECOVERING
        backend.check_health()  # still dead, the core still recovering: nothing new
        session.feed(TransportRecovered("input"))  # injected from the console
        assert session.runtime.ladder.state is not State.RECOVERING
        backend.check_health()
        assert session.runtime.ladder.state is State.RECOVERING
        failed = [r for r in records if r.get("kind") == "transport_failed" and r.get("effect") == "Trace"]
        assert [r["reason"] for r in failed] == ["digital_zeros", "still digital_zeros"]
        backend.health = ScriptedHealth(["recovered"])
        backend.check_health()  # the mic is back and the core was waiting for it
        assert session.runtime.ladder.state is not State.RECOVERING
        repaired = [r for r in records if r.get("kind") == "channel_repaired"]
        assert len(repaired) == 2
        # the mic dies and a repair is injected, then the mic comes back: nothing stale is sent
        backend.health = ScriptedHealth(["digital_zeros"])
        backend.check_health()
        session.feed(TransportRecovered("input"))
        backend.health = ScriptedHealth(["recovered"])
        backend.check_health()
        assert not [r for r in records if r.get("kind") == "stale_rejected"]
        await session.stop()

    asyncio.run(body())
