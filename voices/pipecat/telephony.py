"""`lull rehearse --backend pipecat --telephony twilio`: the call on the carrier most
Pipecat phone agents ship with, Twilio Media Streams, all on this machine.

The agent's side is Pipecat's own: `SingleClientWebsocketServerTransport`
(pipecat.transports.websocket.server; FastAPI's websocket transport takes the same
serializer, but FastAPI is not among Lull's dependencies) on 127.0.0.1 and a free port,
with `TwilioFrameSerializer` (auto_hang_up off: no credentials, no REST call). Its
input() and output() take the places of the recorded caller and the clocked speaker.
The serializer turns the phone's 8 kHz mu-law into the pipeline's 16 kHz for whisper
and piper's audio into 8 kHz mu-law (Pipecat's stream resamplers and audioop's mu-law);
the output transport sends it at real-time pace, 40 ms a message, as if it were a
sound card, and reports the bot speaking from what it sent.

The caller's side is `TwilioPhone`, speaking Twilio Media Streams as Twilio does: a
`connected` then a `start` message (the stream's and call's ids, audio/x-mulaw 8000 Hz
mono), then a `media` message of 20 ms of mu-law (160 bytes, base64) every 20 ms from
the caller's recording (then silence until the call ends), and `stop` when it hangs up.
What the agent sends it plays at real-time pace, 20 ms at a time, and keeps as what the
caller heard; a `mark` is echoed once the audio queued before it has played, and a
`clear` drops the audio still queued (its marks are echoed at once), as Twilio does.
The phone's mu-law is Lull's own (`voices.line.g711`), not the serializer's.

Pipecat 1.14's serializer and transport send no marks and read none back, so the bot
speaking frames follow what the transport sent, not what the phone played. `PlayedMarks`
sends a mark each time the transport reports the bot stopped speaking; the phone's echo
says how much of the prompt it still had to play then (the journal's `twilio_call`
observation, at the end of the call, with the caller's wait at the phone after each
utterance in the recording).

What this shape does to the audio (soxr 1.0's stream resampler, VHQ, as the serializer
makes it): it hands its output over in blocks, about 95 ms at a time from 8 to 16 kHz
and about 150 ms at a time from piper's 22.05 kHz to 8 kHz. The agent hears the caller
about 100 ms after the phone sent it; the phone hears a prompt about 140 ms after the
transport reports the bot started speaking, and is still playing it 0.1-0.3 s after the
report that it stopped (so the listening window arms that much before the caller has
heard the prompt end). The last block of each prompt (75-165 ms, piper's trailing
silence as a rule) stays in the resampler and is cleared, unsent, once it has been idle
for 0.2 s.
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import uuid
from collections import Counter, deque
from pathlib import Path

import numpy as np
from pipecat.frames.frames import BotStoppedSpeakingFrame, Frame, InputAudioRawFrame, OutputTransportMessageUrgentFrame
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.serializers.twilio import TwilioFrameSerializer
from pipecat.transports.websocket.server import SingleClientWebsocketServerParams, SingleClientWebsocketServerTransport

from voices.backends.recorded_wait import AUDIBLE, gaps_from_audio
from voices.line import g711

PHONE_RATE = 8000
PACKET = 160  # 20 ms of 8 kHz mu-law: one Twilio media message
PACKET_S = PACKET / PHONE_RATE
PIPELINE_RATE = 16_000  # what whisper and the VAD hear
HOST = "127.0.0.1"
SILENCE = b"\xff" * PACKET  # mu-law's zero
TELEPHONY = ("twilio",)  # what --telephony takes
UTTERANCE_GAP_S = 0.7  # a pause this long in the caller's recording ends an utterance


def free_port(host: str = HOST) -> int:
    """A port nothing listens on now (the transport takes a port number, not a socket)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def read_caller_8k(path: Path) -> np.ndarray:
    """The caller's recording as the phone sends it: mono, 8 kHz, float."""
    import soundfile

    from voices.stt import resample

    data, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    return resample(data.mean(axis=1), int(rate), PHONE_RATE)


class TwilioPhone:
    """The phone's side of a Twilio Media Stream, dialled into a websocket URL."""

    def __init__(self, caller: Path, *, stream_sid: str, call_sid: str, account_sid: str) -> None:
        self.stream_sid, self.call_sid, self.account_sid = stream_sid, call_sid, account_sid
        audio = read_caller_8k(caller)
        self._audio = audio
        self._ulaw = g711.encode(g711.pcm16(audio)).tobytes()
        self.duration_s = audio.size / PHONE_RATE
        self.started_at: float | None = None  # loop time of the first media message
        self.hung_up_at: float | None = None
        self.played: list[tuple[float, bytes]] = []  # (loop time, pcm16 at 8 kHz) as played
        self.played_rate = PHONE_RATE
        self.on_played = lambda loop_time, pcm16: None  # what the caller heard (out.wav)
        self.sent: Counter[str] = Counter()  # messages by event, each way
        self.received: Counter[str] = Counter()
        self.marks: list[dict] = []  # {"name", "received", "echoed"} (loop times)
        self.clears: list[dict] = []  # {"at", "dropped_s"}
        self.problems: list[str] = []  # what Twilio would not take from the agent, or the stream closing under the phone
        self._queue: deque[bytes | dict] = deque()  # audio to play, and marks behind it
        self._more = asyncio.Event()
        self._seq = 0
        self._ws = None
        self._tasks: list[asyncio.Task] = []
        self._echoes: set[asyncio.Task] = set()
        self._receiver: asyncio.Task | None = None

    # -- the call ------------------------------------------------------------------------

    async def dial(self, url: str) -> None:
        """Connect, say `connected` and `start`, then stream the caller and play the agent."""
        from websockets.asyncio.client import connect

        self._ws = await connect(url, open_timeout=10, max_size=None)
        await self._send({"event": "connected", "protocol": "Call", "version": "1.0.0"})
        await self._send({
            "event": "start",
            "start": {
                "accountSid": self.account_sid, "streamSid": self.stream_sid, "callSid": self.call_sid,
                "tracks": ["inbound"], "customParameters": {},
                "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": PHONE_RATE, "channels": 1},
            },
        })
        self._receiver = asyncio.ensure_future(self._receive())
        self._tasks = [asyncio.ensure_future(self._talk()), asyncio.ensure_future(self._play())]

    async def hang_up(self) -> None:
        """`stop`, then the socket closed."""
        if self.started_at is not None and self.hung_up_at is None:
            self.hung_up_at = asyncio.get_running_loop().time()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await asyncio.gather(*self._echoes, return_exceptions=True)  # a mark played is echoed before `stop`
        self._tasks = []
        if self._ws is None:
            return
        try:
            await self._send({"event": "stop", "stop": {"accountSid": self.account_sid, "callSid": self.call_sid}})
            await self._ws.close()
        except Exception as exc:  # noqa: BLE001  the agent may have gone first
            self.problems.append(f"stop: {type(exc).__name__}")
        if self._receiver is not None:
            await asyncio.gather(self._receiver, return_exceptions=True)
        self._ws = None

    async def _send(self, message: dict) -> None:
        self._seq += 1
        payload = {"sequenceNumber": str(self._seq), **message}
        if message["event"] not in ("connected",):
            payload["streamSid"] = self.stream_sid
        self.sent[message["event"]] += 1
        await self._ws.send(json.dumps(payload))

    async def _send_quietly(self, message: dict) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            await self._send(message)
        except ConnectionClosed:
            self.problems.append(f"{message['event']}: the agent closed the stream first")

    # -- the caller's voice, to the agent ------------------------------------------------

    async def _talk(self) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            await self._talk_on()
        except ConnectionClosed:  # the agent hung up first
            self.problems.append("the agent closed the stream while the caller was on it")

    async def _talk_on(self) -> None:
        loop = asyncio.get_running_loop()
        self.started_at = t = loop.time()
        chunk = 0
        while True:  # the caller's line stays open until the call ends: silence after the recording
            block = self._ulaw[chunk * PACKET:(chunk + 1) * PACKET]
            block += SILENCE[len(block):]
            chunk += 1
            await self._send({"event": "media", "media": {
                "track": "inbound", "chunk": str(chunk), "timestamp": str(round((chunk - 1) * PACKET_S * 1000)),
                "payload": base64.b64encode(block).decode("ascii"),
            }})
            t += PACKET_S
            await asyncio.sleep(max(0.0, t - loop.time()))

    # -- the agent's voice, to the caller ------------------------------------------------

    async def _receive(self) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            async for message in self._ws:
                self._take(message)
        except ConnectionClosed:
            pass

    def _take(self, message: str | bytes) -> None:
        loop = asyncio.get_running_loop()
        try:
            data = json.loads(message)
        except (TypeError, ValueError):
            self.problems.append("a message that is not JSON")
            return
        event = data.get("event")
        self.received[str(event)] += 1
        if data.get("streamSid") != self.stream_sid:
            self.problems.append(f"{event}: streamSid {data.get('streamSid')!r}")
        if event == "media":
            try:
                self._queue.append(base64.b64decode(data["media"]["payload"], validate=True))
            except (KeyError, TypeError, ValueError):
                self.problems.append("media without a base64 payload")
                return
        elif event == "mark":
            name = (data.get("mark") or {}).get("name")
            self.marks.append({"name": name, "received": loop.time(), "echoed": None})
            self._queue.append(self.marks[-1])
        elif event == "clear":  # barge-in: what is queued is not played; its marks come back now
            dropped = sum(len(item) for item in self._queue if isinstance(item, bytes))
            marks = [item for item in self._queue if isinstance(item, dict)]
            self._queue.clear()
            self.clears.append({"at": loop.time(), "dropped_s": dropped / PHONE_RATE})
            for mark in marks:
                self._echo(mark)
        else:
            self.problems.append(f"an event Twilio does not take: {event!r}")
            return
        self._more.set()

    def _echo(self, mark: dict) -> None:
        mark["echoed"] = asyncio.get_running_loop().time()
        if self._ws is not None:
            task = asyncio.ensure_future(self._send_quietly({"event": "mark", "mark": {"name": mark["name"]}}))
            self._echoes.add(task)
            task.add_done_callback(self._echoes.discard)

    async def _play(self) -> None:
        """20 ms at a time from the queue, each reported as it starts playing; a mark at
        the head of the queue has had all the audio before it played."""
        loop = asyncio.get_running_loop()
        until = 0.0  # loop time the audio already played ends
        while True:
            if not self._queue:
                self._more.clear()
                await self._more.wait()
                continue
            head = self._queue[0]
            if isinstance(head, dict):
                self._queue.popleft()
                self._echo(head)
                continue
            piece = head[:PACKET]
            if len(head) > PACKET:
                self._queue[0] = head[PACKET:]
            else:
                self._queue.popleft()
            at = max(loop.time(), until)  # idle: it plays at once
            pcm = g711.decode(np.frombuffer(piece, np.uint8)).tobytes()
            self.played.append((at, pcm))
            self.on_played(at, pcm)
            until = at + len(piece) / PHONE_RATE
            await asyncio.sleep(max(0.0, until - loop.time()))

    def speech_ends_s(self) -> list[float]:
        """Where each utterance in the caller's recording ends (s from its start): the
        last 10 ms louder than AUDIBLE (RMS) before 0.7 s that are not."""
        frame = PHONE_RATE // 100
        n = self._audio.size // frame
        rms = np.sqrt(np.mean(self._audio[:n * frame].reshape(n, frame) ** 2, axis=1))
        loud = np.flatnonzero(rms >= AUDIBLE)
        if not loud.size:
            return []
        breaks = np.flatnonzero(np.diff(loud) > UTTERANCE_GAP_S * 100)
        return [(int(loud[i]) + 1) / 100 for i in [*breaks, loud.size - 1]]

    def caller_waits_ms(self) -> list[float | None]:
        """The caller's wait at the phone after each utterance sent so far: from its last
        audible sample to the first audible sample the phone played after it (None: none
        before the next utterance ended)."""
        if self.started_at is None:
            return []
        now = self.hung_up_at if self.hung_up_at is not None else asyncio.get_running_loop().time()
        ends = [(self.started_at + end) * 1000.0 for end in self.speech_ends_s() if self.started_at + end < now]
        played = [(t * 1000.0, np.frombuffer(pcm, np.int16).astype(np.float32) / 32768.0, PHONE_RATE) for t, pcm in self.played]
        return gaps_from_audio(ends, played)

    def figures(self) -> dict:
        """The call as the phone saw it, for the journal."""
        lags = [round((m["echoed"] - m["received"]) * 1000.0, 1) for m in self.marks if m["echoed"] is not None]
        return {
            "sent": dict(self.sent), "received": dict(self.received),
            "heard_s": round(sum(len(pcm) // 2 for _, pcm in self.played) / PHONE_RATE, 2),
            "marks_echoed": len(lags),
            # how much the phone still had to play when Pipecat reported the bot stopped
            "played_after_bot_stopped_ms": lags,
            "clears": [{"dropped_s": round(c["dropped_s"], 3)} for c in self.clears],
            # what the phone has still to play now (at the end of the call: what hanging up cuts)
            "queued_s": round(sum(len(item) for item in self._queue if isinstance(item, bytes)) / PHONE_RATE, 3),
            # from the end of each utterance the phone sent to the first audible sample it played after
            "caller_waits_ms": self.caller_waits_ms(),
            "problems": self.problems[:10],
        }


class HeardTap(FrameProcessor):
    """Right after the server's input transport: the audio it decoded from the phone, to
    `on_frame` (mic.wav), each block right after the one before while they come on time."""

    def __init__(self) -> None:
        super().__init__(name="LullHeardTap")
        self.on_frame = lambda loop_time, pcm16: None
        self._heard_until: float | None = None

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, InputAudioRawFrame) and direction is FrameDirection.DOWNSTREAM:
            now = asyncio.get_running_loop().time()
            # the serializer's resampler hands over a few samples more or less each time:
            # stamped on arrival the blocks would overlap or leave gaps a sample wide
            at = now if self._heard_until is None or abs(now - self._heard_until) > 0.1 else self._heard_until
            self.on_frame(at, frame.audio)
            self._heard_until = at + len(frame.audio) / 2 / frame.sample_rate
        await self.push_frame(frame, direction)


class PlayedMarks(FrameProcessor):
    """Right before the server's output transport: a Twilio mark each time the transport
    reports the bot stopped speaking (the phone echoes it once it has played that far)."""

    def __init__(self, stream_sid: str) -> None:
        super().__init__(name="LullPlayedMarks")
        self.stream_sid = stream_sid
        self.marks_sent = 0

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)
        if isinstance(frame, BotStoppedSpeakingFrame) and direction is FrameDirection.UPSTREAM:
            self.marks_sent += 1
            await self.push_frame(OutputTransportMessageUrgentFrame(message={
                "event": "mark", "streamSid": self.stream_sid, "mark": {"name": f"bot-stopped-{self.marks_sent}"},
            }))


class TwilioCarrier:
    """Pipecat's websocket server transport with Twilio's serializer on 127.0.0.1, and the
    phone that dials it. Pipeline: input(), heard, ..., marks, output()."""

    def __init__(self, caller: Path, *, out_sample_rate: int, host: str = HOST) -> None:
        # Twilio's ids, made up: the phone sends them in `start`, the serializer stamps them
        # on what it sends (a server behind Twilio reads them from `start` before it builds
        # the serializer; this one is built first, so both ends are given them)
        stream_sid, call_sid, account_sid = (prefix + uuid.uuid4().hex for prefix in ("MZ", "CA", "AC"))
        self.serializer = TwilioFrameSerializer(
            stream_sid, call_sid, params=TwilioFrameSerializer.InputParams(auto_hang_up=False, sample_rate=PIPELINE_RATE),
        )
        self.host, self.port = host, free_port(host)
        self.transport = SingleClientWebsocketServerTransport(
            SingleClientWebsocketServerParams(
                audio_in_enabled=True, audio_in_sample_rate=PIPELINE_RATE,
                audio_out_enabled=True, audio_out_sample_rate=out_sample_rate,
                serializer=self.serializer, allowed_origins=[],
            ),
            host=host, port=self.port,
        )
        self.phone = TwilioPhone(caller, stream_sid=stream_sid, call_sid=call_sid, account_sid=account_sid)
        self.heard = HeardTap()
        self.marks = PlayedMarks(stream_sid)
        self._ready, self._connected = asyncio.Event(), asyncio.Event()

        @self.transport.event_handler("on_websocket_ready")
        async def _ready(_transport):
            self._ready.set()

        @self.transport.event_handler("on_client_connected")
        async def _connected(_transport, _websocket):
            self._connected.set()

    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}"

    def input(self):
        return self.transport.input()

    def output(self):
        return self.transport.output()

    async def dial(self, timeout_s: float = 10.0) -> None:
        """Once the pipeline has started: the phone calls in, and the call is up when the
        server has it (the first prompt's audio then reaches the phone)."""
        await asyncio.wait_for(self._ready.wait(), timeout_s)
        await self.phone.dial(self.url)
        await asyncio.wait_for(self._connected.wait(), timeout_s)

    async def hang_up(self) -> None:
        await self.phone.hang_up()

    def figures(self) -> dict:
        return {"marks_sent": self.marks.marks_sent, **self.phone.figures()}


__all__ = ["HeardTap", "PlayedMarks", "TELEPHONY", "TwilioCarrier", "TwilioPhone", "free_port", "read_caller_8k"]
