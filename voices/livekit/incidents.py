"""Incidents through a real LiveKit AgentSession, on virtual time (`lull incidents run --via livekit`).

Each incident runs in an `AgentSession` (its audio recognition, speech queue, speech
handles and event emitter) with Lull's `LullLadder` attached. The caller is a scripted
VAD and STT plugin; the loudspeaker a `ClockedOutput` that plays each prompt as the
incident's `playback` says (a start delay, so many ms a word), whatever the TTS made of
it (voices.livekit.simulated). The loop is a `VirtualTimeLoop`: the whole library
runs in seconds, and the verdict is judged exactly as on the virtual clock.

A step goes in through LiveKit where LiveKit has a way in:

- a caller's turn starting and ending: the VAD plugin's start and end of speech, which
  the session turns into its user state;
- its interpretation, after the turn ended: the STT plugin's final transcript (read by
  the adapter's matcher: here, one that knows the incident's words);
- a tool starting and finishing ok or failed: `tool_execution_updated` on the session,
  as its tool executor emits it;
- playback started and completed: the output's reports, through the speech handle.

Everything else (a question or announcement asked of Lull, a stale or duplicate
callback, a media path failing, a route switched off, an interpretation before its turn
ended) goes in through `LullLadder.feed`. A prompt the incident's endpoint rejects, or
whose start or completion report it loses, is rehearsed at the adapter's edge
(`feed(PromptFailed)`, `drop_report`): a real session cannot be made to lose its own
callbacks. Each run counts how many steps went each way.

At one virtual instant the virtual clock's order holds: scripted steps, then endpoint
reports, then the core's timers, each settled through every task before the next.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from livekit.agents import Agent, AgentSession
from livekit.agents.llm import FunctionCall
from livekit.agents.voice.events import ToolCallEnded, ToolCallStarted, ToolExecutionUpdatedEvent

from ladder import PromptFailed, PromptSent, RequestPrompt, TimerFired, event_from_dict
from ladder.events import ToolFinished, ToolStarted, TurnEnded, TurnInterpreted, TurnStarted
from sessions.incidents import Incident, Outcome, Step
from voices.framework_incidents import ENDPOINT, FINISH, SCRIPTED, SPOKEN_INTENTS, FrameworkRun, IncidentWords, horizon_ms
from voices.virtual_loop import VirtualTimeLoop, run_virtual

from .adapter import LullLadder
from .simulated import ClockedOutput, ScriptedSTT, ScriptedVAD, SilentInput, SilentTTS


class LiveKitRun(FrameworkRun):
    """A run through an AgentSession: `as_native` steps went in through LiveKit's own
    plugins and session events."""

    @property
    def lull(self) -> LullLadder:
        return self.adapter  # type: ignore[return-value]


class _Endpoint:
    """The incident's playback at the adapter's edge: what LiveKit's own output cannot
    rehearse (a rejected prompt, a sent report, a lost start or completion)."""

    def __init__(self, incident: Incident, loop: VirtualTimeLoop) -> None:
        self.playback = incident.playback
        self.loop = loop
        self.lull: LullLadder | None = None
        self.asked_at: dict[int, float] = {}  # token -> loop time the session was asked to say it

    def timing(self, text: str) -> tuple[float, float]:
        pb = self.playback
        return pb.measured.get(text, (pb.start_delay_ms, max(1, len(text.split())) * pb.ms_per_word))

    def playing(self) -> tuple[float, float]:
        """The prompt the session is saying now, as the output asks for it: (ms until it
        is heard, ms it lasts). One loudspeaker, as on the virtual clock: a prompt asked
        for while another played starts as that one ends, its start delay already run."""
        assert self.lull is not None
        token = self.lull._current_token()
        if token is None:
            return 0.0, 0.0
        delay_ms, duration_ms = self.timing(self.lull._prompts[token].text)
        asked = self.asked_at.get(token, self.loop.time())
        return max(0.0, (asked - self.loop.time()) * 1000.0 + delay_ms), duration_ms

    def asked(self, prompt: RequestPrompt) -> None:
        pb, lull = self.playback, self.lull
        assert lull is not None
        now = self.asked_at[prompt.token] = self.loop.time()
        if prompt.kind in pb.fail:
            def reject(token: int = prompt.token) -> None:
                lull.feed(PromptFailed(token, "endpoint_rejected"))  # its one final report
                handle = lull._handles.get(token)
                if handle is not None:
                    handle.interrupt(force=True)  # never played

            self.loop.call_at_ranked(now, ENDPOINT, reject)
            return
        if pb.report_sent:
            self.loop.call_at_ranked(now, ENDPOINT, lull.feed, PromptSent(prompt.token, self.timing(prompt.text)[1]))
        if prompt.kind in pb.lose_start:
            lull.drop_report(prompt.token, "start")
        if prompt.kind in pb.lose_completion:
            lull.drop_report(prompt.token, "completion")


class _Feeder:
    """Turns the incident's steps into LiveKit's inputs at their virtual times, in order."""

    def __init__(self, run: LiveKitRun, session: AgentSession, vad: ScriptedVAD, stt: ScriptedSTT,
                 loop: VirtualTimeLoop) -> None:
        self.run, self.session, self.vad, self.stt, self.loop = run, session, vad, stt, loop
        self.tool_names: dict[str, str] = {}
        self.native_turn: int | None = None  # the caller turn that began through the VAD

    def deliver(self, step: Step) -> None:
        run, lull = self.run, self.run.lull
        if step.deliver_timer is not None:
            kind = step.deliver_timer["timer"]
            run.as_events += 1
            lull.feed(TimerFired(kind, run.timer_ref(kind, step.deliver_timer["generation"])))
            return
        data = dict(step.event or {})
        if isinstance(data.get("token"), str):
            data["token"] = run.tokens().get(data["token"], -1)
        event = event_from_dict(data)
        if self._native(event, lull):
            run.as_native += 1
        else:
            run.as_events += 1
            lull.feed(event)

    def _native(self, event, lull: LullLadder) -> bool:
        kind = type(event)
        # a turn is LiveKit's own when the adapter would number and name it so, and the
        # session hears no one speaking (its user state changes on the VAD's start)
        if (kind is TurnStarted and event.seq == lull._seq + 1 and event.turn == lull.turn_id(event.seq)
                and self.session.user_state != "speaking"):
            self.native_turn = event.seq
            self.vad.start()
            return True
        native = event.seq == self.native_turn == lull._seq if kind in (TurnEnded, TurnInterpreted) else False
        if kind is TurnEnded and native and not lull._user_stopped:
            self.vad.end()
            return True
        if (kind is TurnInterpreted and native and lull._user_stopped and not lull._interpreted
                and event.intent in SPOKEN_INTENTS):
            self.stt.final(event.value if event.intent == "answer" and event.value else event.intent)
            return True
        if kind is ToolStarted:
            self.tool_names[event.call] = event.name
            call = FunctionCall(call_id=event.call, name=event.name, arguments="{}")
            self.session.emit("tool_execution_updated", ToolExecutionUpdatedEvent(update=ToolCallStarted(function_call=call)))
            return True
        if kind is ToolFinished and event.outcome in ("ok", "failed") and event.call in self.tool_names:
            status = "done" if event.outcome == "ok" else "error"
            self.session.emit("tool_execution_updated", ToolExecutionUpdatedEvent(
                update=ToolCallEnded(id=event.call, call_id=event.call, status=status)))
            return True
        return False

    async def feed(self, schedule: tuple[Step, ...], horizon_s: float) -> None:
        for step in schedule:
            await self._at(step.at / 1000.0, SCRIPTED)
            self.deliver(step)
            await self.loop.settle()
        await self._at(horizon_s, FINISH)
        await self.loop.settle()

    async def _at(self, when: float, rank: int) -> None:
        woke = self.loop.create_future()
        self.loop.call_at_ranked(max(when, self.loop.time()), rank, woke.set_result, None)
        await woke


async def _run(incident: Incident, record_to: Path | None) -> LiveKitRun:
    loop = asyncio.get_running_loop()
    assert isinstance(loop, VirtualTimeLoop)
    turn_ids = {s.event["seq"]: s.event["turn"] for s in incident.schedule
                if s.event and s.event.get("kind") == "turn_started"}
    endpoint = _Endpoint(incident, loop)
    vad, stt = ScriptedVAD(), ScriptedSTT()
    session = AgentSession(vad=vad, stt=stt, tts=SilentTTS(), user_away_timeout=None)
    session.input.audio = SilentInput()
    session.output.audio = ClockedOutput(endpoint.playing, lambda at, callback: loop.call_at_ranked(at, ENDPOINT, callback))
    lull = LullLadder(
        incident.ladder_policy(), matcher=IncidentWords(), end_call_on_close=False, journal_dir=record_to,
        services={"incident": incident.name, "stt": "ScriptedSTT", "vad": "ScriptedVAD", "tts": "SilentTTS",
                  "audio_output": "ClockedOutput"},
        turn_id=lambda seq: turn_ids.get(seq, f"user-{seq}"), on_prompt=endpoint.asked,
    )
    endpoint.lull = lull
    lull.attach(session)
    loop.late_callbacks.append(lull._fire)  # the core's timers come after what is queued with them
    run = LiveKitRun(incident, lull)
    await session.start(Agent(instructions="A Lull incident rehearsal: Lull's ladder speaks; there is no LLM."))
    await _Feeder(run, session, vad, stt, loop).feed(incident.schedule, horizon_ms(incident) / 1000.0)
    run.take_horizon()
    await session.aclose()
    lull.close_journal()
    return run


def run_incident_via_livekit(incident: Incident, record_to: Path | None = None) -> tuple[Outcome, LiveKitRun]:
    """Run one incident through a LiveKit AgentSession on virtual time and judge it;
    `record_to`: the adapter journals the call there (`source: livekit`)."""
    run = run_virtual(_run(incident, record_to))
    return run.judged(), run


__all__ = ["LiveKitRun", "run_incident_via_livekit"]
