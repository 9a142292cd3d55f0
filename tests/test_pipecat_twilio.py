"""`lull rehearse --backend pipecat --telephony twilio`: the call through Pipecat's own
websocket server transport and TwilioFrameSerializer, on 127.0.0.1, with a local phone
speaking Twilio Media Streams (voices/pipecat/telephony.py).

Real sockets need real time (the transport paces its audio on the monotonic clock, not
the loop's), so the call is kept to one caller turn: the code, read back, then the phone
hangs up. What is asserted comes from the audio and the messages, never from how long
anything took: the clock only guards against a hang."""

from __future__ import annotations

import asyncio
import base64
import json

import numpy as np
import pytest
import soundfile

pytest.importorskip("pipecat", reason="the pipecat extra is not installed")
pytest.importorskip("websockets", reason="websockets (Pipecat's websocket transport) is not installed")

from file_caller import speech  # noqa: E402
from sessions.flowfiles import load_flow  # noqa: E402
from sessions.journal import read_journal  # noqa: E402
from sessions.live import LiveSession  # noqa: E402
from sessions.replay import replay  # noqa: E402
from redaction_checks import journal_leaks  # noqa: E402
from voices.backends.recorded_wait import AUDIBLE  # noqa: E402

LEAD_IN_S = 9.0  # the greeting, disclosure and question take about 7.5 s of audio
HANG_GUARD_S = 120.0  # a call of about 15 s of audio; only a hang reaches this


def test_a_call_on_twilio_media_streams_reads_the_code_back_and_replays_clean(loaded_models, tmp_path):
    from voices.pipecat.backend import PipecatBackend

    # the caller answers inside the first window, then says nothing more. In piper's voice:
    # in espeak-ng's, the pipeline on the 8 kHz line read "my code in 4 rate" (twice) or
    # "4 8 1" after 8.0, 9.0 and 9.5 s of lead-in (README); piper's read right after each
    caller = tmp_path / "caller.wav"
    words = speech(loaded_models, "my code is four eight two one")
    audio = np.concatenate([np.zeros(int(LEAD_IN_S * 16000), np.float32), words, np.zeros(16000, np.float32)])
    room = np.random.default_rng(7).normal(0.0, 10 ** (-50 / 20), audio.size).astype(np.float32)  # as recorded_caller's
    soundfile.write(caller, audio + room, 16000)
    folder = tmp_path / "call"
    backend = PipecatBackend(loaded_models, caller, telephony="twilio")
    lines: list[tuple[str, str]] = []
    backend.on_line = lambda who, text: lines.append((who, text))

    async def call() -> LiveSession:
        session = LiveSession(load_flow("reference_code"), backend, journal_dir=folder)
        read_back = asyncio.Event()
        heard_code = []

        def listen(now, kind, record):
            if kind == "input" and record.get("kind") == "caller_utterance":
                heard_code.append(now)
            elif kind == "input" and record.get("kind") == "playback_completed" and heard_code:
                read_back.set()  # the prompt after the caller's answer: the read-back

        session.listeners.append(listen)
        await session.start()
        phone = backend.carrier.phone
        await asyncio.wait_for(read_back.wait(), HANG_GUARD_S)
        # the phone plays what is queued to the end: the mark sent at the bot's stop comes back then
        while not (phone.marks and all(m["echoed"] is not None for m in phone.marks)
                   and len(phone.marks) == backend.carrier.marks.marks_sent):
            await asyncio.sleep(0.02)
        await session.stop()
        return session

    session = asyncio.run(asyncio.wait_for(call(), HANG_GUARD_S))
    said = [text for who, text in lines if who == "agent"]
    assert any("4821" in text or "4 8 2 1" in text for text in said), lines  # the code, read back as heard
    assert [text for who, text in lines if who == "caller"], lines

    journal = read_journal(folder / "journal.jsonl")
    pipeline = journal.header["pipeline"]
    assert "SingleClientWebsocketServerTransport" in pipeline["transport"] and "TwilioFrameSerializer" in pipeline["serializer"]
    assert journal_leaks(folder / "journal.jsonl", "4821") == []
    result = replay(folder)
    assert result.verdict == "CLEAN", result.describe()

    # mic.wav: what the server decoded from the phone (16 kHz); out.wav: what the phone played (8 kHz)
    assert soundfile.info(folder / "mic.wav").samplerate == 16000
    assert soundfile.info(folder / "out.wav").samplerate == 8000
    mic, _ = soundfile.read(folder / "mic.wav", dtype="float32")
    out, _ = soundfile.read(folder / "out.wav", dtype="float32")
    end_ms = journal.records[-1]["t_ms"]
    assert abs(mic.size / 16 - end_ms) < 500 and abs(out.size / 8 - end_ms) < 1000, (mic.size / 16, out.size / 8, end_ms)
    assert np.abs(mic).max() > 0 and np.abs(out).max() >= AUDIBLE  # the room's noise came down the line; the code is masked
    # the code is masked in both, where the journal says
    masked = [r for r in journal.records if r.get("kind") == "audio_masked"]
    assert {m["track"] for m in masked} == {"mic", "out"}, masked
    for m in masked:
        audio, per_ms = (mic, 16) if m["track"] == "mic" else (out, 8)
        span = audio[int(m["from_ms"] * per_ms) + 1:int(m["to_ms"] * per_ms) - 1]
        assert span.size and float(np.abs(span).max()) == 0.0, m
    # each prompt the journal says started is heard at the phone (the transport sends the
    # audio in the serializer resampler's bursts, so the phone hears it a burst later)
    starts = [r["t_ms"] for r in journal.records if r.get("type") == "input" and r.get("kind") == "playback_started"]
    assert len(starts) == 4, starts  # greeting, disclosure, question, read-back
    out_masks = [(m["from_ms"], m["to_ms"]) for m in masked if m["track"] == "out"]
    said_aloud = [t for t in starts if not any(lo <= t + 1 and t < hi for lo, hi in out_masks)]
    assert len(said_aloud) == 3, (starts, out_masks)  # the read-back is masked
    for t in said_aloud:
        assert np.abs(out[int(t * 8):int((t + 1000) * 8)]).max() >= AUDIBLE, t

    # the phone: connected, start, 20 ms media from the first, marks echoed, stop at the end
    phone = backend.carrier.phone
    figures = next(r for r in journal.records if r.get("kind") == "twilio_call")
    assert figures["sent"]["connected"] == 1 and figures["sent"]["start"] == 1 and figures["sent"]["media"] > 100
    assert phone.sent["stop"] == 1 and phone.problems == [], phone.problems
    assert figures["received"]["media"] > 0 and figures["received"]["mark"] == backend.carrier.marks.marks_sent >= 4
    assert figures["marks_echoed"] == figures["received"]["mark"]
    assert all(lag >= 0 for lag in figures["played_after_bot_stopped_ms"])
    assert figures["heard_s"] == pytest.approx(sum(len(pcm) for _, pcm in phone.played) / 2 / 8000, abs=0.01)
    # the caller's wait at the phone, from the end of the code as sent to the read-back heard
    (wait_ms,) = figures["caller_waits_ms"]
    assert wait_ms is not None and 0 < wait_ms < 10_000, figures
    assert 0 <= figures["caller_started_ms"] < starts[0]  # the phone was on before the greeting
    print("caller's wait at the phone after the code:", wait_ms, "ms; the phone still played",
          figures["played_after_bot_stopped_ms"], "ms after each bot stop")
    assert session.closed.is_set()


def test_the_phone_speaks_twilio_media_streams_and_honours_mark_and_clear(tmp_path):
    """The phone alone, against a websocket server standing in for the agent: its first
    messages, its 20 ms media, a mark echoed only after the audio before it has played,
    and a clear that drops what is queued and returns its marks at once."""
    from websockets.asyncio.server import serve

    from voices.line import g711
    from voices.pipecat.telephony import PACKET, TwilioPhone, free_port

    soundfile.write(tmp_path / "caller.wav", np.zeros(4410, np.float32), 44100)  # 0.1 s, resampled to 8 kHz
    phone = TwilioPhone(tmp_path / "caller.wav", stream_sid="MZ1", call_sid="CA1", account_sid="AC1")
    got: list[dict] = []
    tone = (np.sin(np.arange(8000) * 2 * np.pi * 440 / 8000) * 0.3).astype(np.float32)
    codes = g711.encode(g711.pcm16(tone)).tobytes()
    second = base64.b64encode(codes).decode()  # 1 s of mu-law
    packet = base64.b64encode(codes[:PACKET]).decode()  # 20 ms

    async def agent(ws):
        async def send(message):
            await ws.send(json.dumps({"streamSid": "MZ1", **message}))

        async def receive(event):
            while True:
                message = json.loads(await ws.recv())
                got.append(message)
                if message["event"] == event:
                    return message

        await receive("media")
        await send({"event": "media", "media": {"payload": second}})
        await send({"event": "mark", "mark": {"name": "after-the-tone"}})
        await receive("media")  # 20 ms on, the tone is playing: barge in
        await send({"event": "clear"})
        assert (await receive("mark"))["mark"]["name"] == "after-the-tone"
        await send({"event": "media", "media": {"payload": packet}})
        await send({"event": "mark", "mark": {"name": "short"}})
        assert (await receive("mark"))["mark"]["name"] == "short"
        await receive("stop")
        agent_done.append(True)

    agent_done: list[bool] = []

    async def run():
        port = free_port()
        async with serve(agent, "127.0.0.1", port):
            await phone.dial(f"ws://127.0.0.1:{port}")
            while len(phone.marks) < 2 or phone.marks[-1]["echoed"] is None:
                await asyncio.sleep(0.01)
            await phone.hang_up()

    asyncio.run(asyncio.wait_for(run(), 30))
    assert agent_done, got  # the stand-in agent's own checks passed (the server only logs a failure)
    events = [m["event"] for m in got]
    assert events[:3] == ["connected", "start", "media"], events
    start = got[1]["start"]
    assert start["mediaFormat"] == {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}
    assert start["streamSid"] == got[1]["streamSid"] == "MZ1" and start["callSid"] == "CA1"
    media = [m for m in got if m["event"] == "media"]
    assert all(len(base64.b64decode(m["media"]["payload"])) == PACKET for m in media)
    assert [m["media"]["chunk"] for m in media[:3]] == ["1", "2", "3"]
    assert events[-1] == "stop" and got[-1]["stop"]["callSid"] == "CA1"
    # the clear dropped what had not played, and played and dropped add up to the tone
    (cleared,) = phone.clears
    played_before_clear = sum(len(pcm) // 2 for t, pcm in phone.played if t < cleared["at"])
    assert 0 < played_before_clear < 8000 and played_before_clear + round(cleared["dropped_s"] * 8000) == 8000
    # the first mark came back at the clear, the second once its 20 ms had played
    first, short = phone.marks
    assert cleared["at"] <= first["echoed"] < short["received"]
    last_piece = max(t for t, _ in phone.played)
    assert short["echoed"] >= last_piece + PACKET / 8000 - 1e-6
    assert phone.problems == []
