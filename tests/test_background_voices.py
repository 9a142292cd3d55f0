"""Background voices are not the caller (voices.background_voices): the judge's rules on
their own, then a television made of espeak-ng voices under a caller through the file
backend, as a user runs it (a real process, the real models)."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile

from voices.background_voices import (
    AGAIN,
    LONG_TURN,
    LOOP,
    QUIETER,
    BackgroundVoices,
    speech_level_dbfs,
)

NEWS = "good evening and welcome to the six o'clock news, tonight the council says the road repairs will take longer"


def test_a_loop_is_the_room_unless_it_holds_a_reply():
    room = BackgroundVoices()
    loop = "I'm a young man, I'm a young man, I'm a young man, I'm a young man, I'm a young man, I'm a young man"
    assert room.judge(loop, loop, -30.0, reply=False).reason == LOOP
    # a caller's "four four four four" repeats a word: a code, read as one
    assert room.judge("four four four four", "four four four four", -20.0, reply=True) is None


def test_a_turn_open_past_the_bound_with_no_reply_is_the_room():
    room = BackgroundVoices()
    verdict = room.judge(NEWS, NEWS, -32.0, reply=False, at_bound=True)
    assert verdict.reason == LONG_TURN and verdict.words == len(NEWS.split())
    assert room.judge("well my code is four eight two one and", "", -32.0, reply=True, at_bound=True) is None


def test_far_quieter_than_the_caller_with_no_reply_is_the_room():
    room = BackgroundVoices()
    for level in (-21.0, -19.0, -20.0):
        room.learn_caller(level)
    assert room.caller_dbfs == -20.0
    assert room.judge("and now the weather", "and now the weather", -33.0, reply=False).reason == QUIETER
    assert room.judge("um what", "um what", -26.0, reply=False) is None  # quieter, but not far
    assert room.judge("yes", "yes", -33.0, reply=True) is None  # a quiet reply is still a reply


def test_the_same_long_run_of_words_twice_before_any_reply_is_the_room():
    room = BackgroundVoices()
    assert room.judge(NEWS, NEWS, -31.0, reply=False) is None  # the first: unclear, as any caller's
    assert room.judge(NEWS, NEWS, -32.5, reply=False).reason == AGAIN
    # another level: another source (a caller going on about something else)
    room = BackgroundVoices()
    room.judge(NEWS, NEWS, -31.0, reply=False)
    assert room.judge(NEWS, NEWS, -22.0, reply=False) is None
    # a reply between them: the caller is there, and their level decides from now on
    room = BackgroundVoices()
    room.judge(NEWS, NEWS, -31.0, reply=False)
    room.learn_caller(-30.0)
    assert room.judge(NEWS, NEWS, -31.0, reply=False) is None
    # short turns ("sorry, what?") are not a run of words
    room = BackgroundVoices()
    room.judge("sorry what was that", "", -31.0, reply=False)
    assert room.judge("sorry what", "", -31.0, reply=False) is None


def test_once_the_room_is_known_only_frames_clearly_louder_are_the_caller():
    room = BackgroundVoices()
    assert room.louder_than_room(-20.0) is None  # nothing known: no gate
    room.learn_room(-32.0)
    room.learn_room(-35.0)  # the room is at least as loud as its loudest turn
    assert room.room_dbfs == -32.0
    assert room.louder_than_room(-20.0) is True
    assert room.louder_than_room(-28.0) is False


def test_speech_level_is_the_voiced_part():
    rate = 16_000
    tone = 0.1 * np.sin(2 * np.pi * 200 * np.arange(rate) / rate)  # -23 dBFS RMS
    with_pauses = np.concatenate([tone, np.zeros(rate), tone])
    assert speech_level_dbfs(with_pauses, rate) == pytest.approx(-23.0, abs=0.1)
    assert speech_level_dbfs(np.zeros(rate), rate) is None
    assert speech_level_dbfs(np.zeros(10), rate) is None


# -- a television under the caller, through the file backend ---------------------------------

TV_LINES = [
    ("en-us+m3", "Good evening and welcome to the six o'clock news. Tonight, councils across the region say road repairs will take longer than planned after a wet autumn."),
    ("en-gb+f2", "Thanks Peter. Forecasters expect the rain to clear by the weekend, but strong winds could still bring down branches in exposed areas."),
    ("en-us+m5", "In sport, the home side came from behind to win two goals to one, with a late header from the captain sealing the points."),
    ("en-gb+f4", "And finally, a cat that went missing three years ago has found its way home, to the delight of a family in the village."),
]


def at_dbfs(audio: np.ndarray, dbfs: float) -> np.ndarray:
    return audio * (10 ** (dbfs / 20) / 10 ** (speech_level_dbfs(audio) / 20))


def television(seconds: float, dbfs: float) -> np.ndarray:
    """Newsreaders (espeak-ng voices, not the agent's) talking on with short gaps, across a
    room (a little low-passed), at `dbfs` as the microphone hears it."""
    from file_caller import espeak

    parts = []
    for voice, words in TV_LINES:
        parts += [espeak(words, voice=voice, words_per_minute=165), np.zeros(4000, np.float32)]
    tv = np.concatenate(parts)
    tv = np.convolve(tv, np.ones(5, np.float32) / 5, mode="same")
    tv = np.tile(tv, int(np.ceil(seconds * 16000 / len(tv))))[: int(seconds * 16000)]
    return at_dbfs(tv, dbfs).astype(np.float32)


@pytest.fixture(scope="module")
def models(loaded_models):
    return loaded_models  # loaded once for the run (conftest)


def test_a_television_under_a_silent_caller_never_holds_the_ladder_and_the_caller_is_heard_over_it(models, tmp_path):
    from file_caller import speech
    from test_cli_errors import lull
    from test_phone_line_call import short_flow

    from sessions.journal import read_journal

    # the question ends about 3.5 s in; the television comes on at 4 s and talks on to the end
    tv_from, seconds = 4.0, 38.0
    audio = np.zeros(int(seconds * 16000), np.float32)
    audio[int(tv_from * 16000):] += television(seconds - tv_from, -32.0)
    # the caller says nothing until 22 s, then answers over the television
    for at, words in ((22.0, "my code is four eight two one"), (29.0, "yes, that is right")):
        said = at_dbfs(speech(models, words), -20.0)
        audio[int(at * 16000):int(at * 16000) + len(said)] += said
    caller = tmp_path / "caller.wav"
    soundfile.write(caller, audio, 16000)
    take = tmp_path / "take"
    result = lull("rehearse", str(short_flow(tmp_path / "short.json")), "--backend", "file", "--caller", str(caller),
                  "--headless", "--journal", str(take), timeout=300)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert "agent > I heard [redacted]. Right?" in result.stdout, result.stdout  # the code, over the television
    assert "call ended: completed" in result.stdout, result.stdout

    journal = read_journal(take)
    records = list(journal.records)
    judged = [r for r in records if r.get("kind") == "background_voices"]
    assert judged and judged[0]["reason"] == LONG_TURN and judged[0]["level_dbfs"] < -28.0, judged
    bound_ms = BackgroundVoices().turn_bound_ms
    # judged within the bound (and a decode) of the turn's start: the ladder was not held
    started = {r["event"]["turn"]: r["t_ms"] for r in records if r.get("kind") == "turn_started" and r["type"] == "input"}
    assert judged[0]["t_ms"] - started[judged[0]["turn"]] < bound_ms + 5000.0, (judged, started)
    # the recording plays from the call's start (after the models load)
    call_ms = next(r["t_ms"] for r in records if r.get("kind") == "start_call")
    assert started[judged[0]["turn"]] < call_ms + (tv_from + 6.0) * 1000.0, (call_ms, started)  # the television's first turn
    # nothing the television said reached the flow as the caller's words or intent
    heard = [r["event"] for r in records if r.get("kind") == "caller_utterance"]
    before_caller = [e for e in heard if e["turn"] != heard[-1]["turn"] and e["turn"] != heard[-2]["turn"]]
    assert before_caller and all(e["text"] == "" and e["reason"].startswith("background_voices:") for e in before_caller), heard
    # the silence ladder ran while the television talked: a reminder before the caller spoke
    reminders = [r for r in records if r.get("effect") == "RequestPrompt" and r.get("kind") == "reminder"]
    assert reminders and reminders[0]["t_ms"] < call_ms + 22_000, (call_ms, [r.get("t_ms") for r in reminders])
    # and the television after it was judged was never a caller turn again: three turns,
    # the television's first, the code and the yes
    assert len(started) == 3, started
    replay = lull("sessions", "replay", str(take), timeout=120)
    assert replay.returncode == 0 and "CLEAN" in replay.stdout, replay.stdout + replay.stderr


def tv_and_caller(models, path, tv_from: float, seconds: float, said: tuple[tuple[float, str], ...]):
    from file_caller import speech

    audio = np.zeros(int(seconds * 16000), np.float32)
    audio[int(tv_from * 16000):] += television(seconds - tv_from, -32.0)
    for at, words in said:
        spoken = at_dbfs(speech(models, words), -20.0)
        audio[int(at * 16000):int(at * 16000) + len(spoken)] += spoken
    soundfile.write(path, audio, 16000)
    return path


@pytest.mark.parametrize("framework", ["pipecat", "livekit"])
def test_through_a_framework_the_room_is_judged_then_gated_and_the_caller_is_heard_over_it(models, tmp_path, framework):
    """The shipped flow through a real Pipecat pipeline or LiveKit AgentSession (Silero,
    Lull's whisper and piper, the room gate before the VAD), on virtual time."""
    import asyncio

    from sessions.flowfiles import load_flow
    from sessions.journal import read_journal
    from sessions.live import LiveSession
    from sessions.replay import replay
    from voices.virtual_loop import run_virtual

    if framework == "pipecat":
        pytest.importorskip("pipecat", reason="the pipecat extra is not installed")
        from voices.pipecat.backend import PipecatBackend as Backend
    else:
        pytest.importorskip("livekit.agents", reason="the livekit extra is not installed")
        from voices.livekit import quiet_livekit_logs
        from voices.livekit.backend import LiveKitBackend as Backend

        quiet_livekit_logs()
    # the question ends about 8 s in; the television from 6 s; the caller answers at 30 s
    caller = tv_and_caller(models, tmp_path / "caller.wav", 6.0, 60.0,
                           ((30.0, "my code is four eight two one"), (38.0, "yes, that is right")))
    folder = tmp_path / "call"
    backend = Backend(models, caller)
    lines: list[tuple[str, str]] = []
    backend.on_line = lambda who, text: lines.append((who, text))

    async def call() -> LiveSession:
        session = LiveSession(load_flow("reference_code"), backend, journal_dir=folder, clock=asyncio.get_running_loop().time)
        await session.start()
        await asyncio.wait_for(session.closed.wait(), 90)
        return session

    session = run_virtual(call())
    said = [text for who, text in lines if who == "agent"]
    assert any("4821" in text or "4 8 2 1" in text for text in said), lines  # read back over the television
    assert session.runtime.snapshot()["ladder"]["outcome"] == "completed", lines
    journal = read_journal(folder / "journal.jsonl")
    judged = [r for r in journal.records if r.get("kind") == "background_voices"]
    assert judged and judged[0]["level_dbfs"] < -28.0, judged
    heard = [r["event"] for r in journal.records if r.get("kind") == "caller_utterance"]
    # before the code, no words of the television reached the flow as an intent or a value
    code_at = next(i for i, e in enumerate(heard) if e["text"] and any(ch.isdigit() for ch in e["text"]))
    assert all(e["intent"] is None for e in heard[:code_at]), heard
    assert backend.adapter.room.room_dbfs is not None
    assert replay(folder).verdict == "CLEAN"


@pytest.mark.parametrize("via", ["core", "pipecat", "livekit"])
def test_the_room_holding_a_turn_past_the_window_gives_one_verdict_on_every_framework(via):
    from pathlib import Path

    from sessions.incidents import load_incident, run_incident

    incident = load_incident(Path(__file__).parent / "incidents" / "background_voices_turn.json")
    if via == "core":
        outcome = run_incident(incident)
    elif via == "pipecat":
        pytest.importorskip("pipecat", reason="the pipecat extra is not installed")
        from voices.pipecat.incidents import run_incident_via_pipecat

        outcome, _ = run_incident_via_pipecat(incident)
    else:
        pytest.importorskip("livekit.agents", reason="the livekit extra is not installed")
        from voices.livekit.incidents import run_incident_via_livekit

        outcome, _ = run_incident_via_livekit(incident)
    assert outcome.passed, outcome.failures


def test_a_frames_level_in_dbfs():
    from voices.background_voices import frame_dbfs

    tone = (0.1 * np.sin(2 * np.pi * 200 * np.arange(320) / 16000) * 32767).astype(np.int16)
    assert frame_dbfs(tone.tobytes()) == pytest.approx(-23.0, abs=0.1)
    assert frame_dbfs(bytes(640)) == -120.0


def test_the_console_says_why_a_turn_was_the_rooms():
    from console.describe import describe_observation

    said = describe_observation({"kind": "background_voices", "turn": "heard-2", "reason": "quieter_than_caller",
                                 "level_dbfs": -33.2, "caller_dbfs": -19.8, "words": 9})
    assert said == ("turn heard-2: background voices, not the caller "
                    "(far quieter than the caller's own turns, with no reply in it; -33 dBFS, the caller -20 dBFS)")
    waited = describe_observation({"kind": "turn_latency", "turn": "heard-3", "perceived_gap_ms": 1064.0,
                                   "end_of_turn": "caller_over_room", "hold_ms": 928.0})
    assert "ended when the caller's voice over the room's stopped" in waited


def _asking(flow) -> "FlowRuntime":  # noqa: F821
    """A compiled flow's runtime with its first question said and its window armed."""
    from ladder import PlaybackCompleted, PlaybackStarted, RequestPrompt, StartCall
    from ladder.flow.runtime import FlowRuntime

    rt = FlowRuntime(flow)
    now, effects = 0.0, rt.handle(StartCall(), 0.0)
    while rt.asking is None or rt.ladder.state.value != "listening":
        prompts = [e for e in effects if isinstance(e, RequestPrompt)]
        assert prompts, rt.ladder.state
        effects = []
        for prompt in prompts:
            effects += rt.handle(PlaybackStarted(prompt.token), now + 10)
            now += 1000
            effects += rt.handle(PlaybackCompleted(prompt.token), now)
    return rt


def test_at_the_bound_a_number_buried_in_a_programme_is_no_reply():
    """A television on from the call's start held the turn open while it talked: its
    ten seconds held "one" ("the home side one night"), read as a value for "how many
    months", so the question it kept from playing was never asked and its number filled
    the slot. At the bound a value counts only in few words; a long code read slowly,
    all digits, still does."""
    import json
    from pathlib import Path

    from console_fixtures import compile_data

    from voices.end_of_turn import holds_value

    months = _asking(compile_data(json.loads((Path(__file__).parent / "flows" / "gym_freeze.json").read_text())))
    programme = ("Good evening, here in the news, heavy rain in expected across the North tonight, with flooding "
                 "possible on some roads. In spot, the home side one night will go to...")
    assert holds_value(months, programme)  # in a turn that ended: the flow reads its number
    assert not holds_value(months, programme, at_bound=True)
    assert holds_value(months, "well I think two months because I'm going away for a while", at_bound=True)
    card = json.loads((Path(__file__).parent / "flows" / "card_activation.json").read_text())
    card["slots"]["last_four"].update(min_length=16, max_length=16, label="card number")
    slowly = "um so it is four eight two one, then five five six seven, eight eight nine nine, one two three four"
    code = _asking(compile_data(card))
    assert len(slowly.split()) > 20 and holds_value(code, slowly, at_bound=True)


def test_a_turn_over_the_room_is_decoded_from_the_callers_stretches():
    """Lull's own backend gates a turn's audio over the room as the frameworks' RoomGate
    gates their frames: the caller's word (with the look-ahead before and the hangover
    after) kept sample for sample, the room's stretches silence, the length unchanged."""
    from voices.background_voices import GATE_HANGOVER_MS, GATE_LOOKAHEAD_MS, gated_to_caller

    rng = np.random.default_rng(3)
    rate = 16000
    audio = at_dbfs(rng.normal(0, 1, 3 * rate).astype(np.float32), -40.0)  # the room murmuring
    word = slice(int(1.0 * rate), int(1.4 * rate))
    audio[word] += at_dbfs(rng.normal(0, 1, word.stop - word.start).astype(np.float32), -20.0)
    room = BackgroundVoices()
    assert gated_to_caller(audio, room) is audio  # the room's level unknown: as it is
    room.learn_room(-40.0)
    gated = gated_to_caller(audio, room)
    assert len(gated) == len(audio)
    assert np.array_equal(gated[word], audio[word])
    before = int((1.0 - GATE_LOOKAHEAD_MS / 1000.0 - 0.05) * rate)
    after = int((1.4 + GATE_HANGOVER_MS / 1000.0 + 0.05) * rate)
    assert not gated[:before].any() and not gated[after:].any()
