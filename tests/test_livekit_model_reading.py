"""Beside an LLM in LiveKit, the model decides what the caller's turns are by calling
the function tools Lull offers (the caller needs time, the caller is back) or by
replying, and its decisions drive Lull's ladder (W8, seed 001). Each runs a real
AgentSession on virtual time: a scripted VAD and STT, a table LLM (a real
`livekit.agents.llm.LLM`, its tool calls run by the session), `LullLadder` with its
tools on the agent, a TTS of silence and a clocked output."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("livekit.agents", reason="the livekit extra is not installed")

from livekit.agents import Agent, AgentSession  # noqa: E402

from ladder import RequestPrompt  # noqa: E402
from model_reading_policy import POLICY, Reader  # noqa: E402
from sessions.replay import replay  # noqa: E402
from voices.livekit import LullLadder, quiet_livekit_logs  # noqa: E402
from voices.livekit.scripted_llm import TableLLM  # noqa: E402
from voices.livekit.simulated import ClockedOutput, ScriptedSTT, ScriptedVAD, SilentInput, SilentTTS  # noqa: E402
from voices.understanding.model_reading import HOLD_NOTE  # noqa: E402
from voices.virtual_loop import run_virtual  # noqa: E402

quiet_livekit_logs()
MS_PER_WORD = 300
QUESTION = "What is your account number?"


class Call:
    """One call: the agent asks its question, then the caller's lines at set times."""

    def __init__(self, table, caller, seconds, meanings=None, journal_dir=None, interruptions=True):
        self.table, self.caller, self.seconds = table, caller, seconds
        self.lull = LullLadder(POLICY, matcher=Reader(meanings or {}), journal_dir=journal_dir,
                               on_prompt=lambda p: self.lull_said.append(p.text))
        self.lull_said: list[str] = []
        self.llm_said: list[str] = []
        self.llm = TableLLM(table)
        self.interruptions = interruptions

    def run(self) -> Call:
        run_virtual(self._call())
        return self

    async def _call(self) -> None:
        loop = asyncio.get_running_loop()
        vad, stt = ScriptedVAD(), ScriptedSTT()
        session = AgentSession(vad=vad, stt=stt, tts=SilentTTS(), llm=self.llm, user_away_timeout=None)
        session.input.audio = SilentInput()
        texts: dict[int, str] = {}

        def playing():
            return 100.0, len(texts.get(id(session.current_speech), "one").split()) * MS_PER_WORD

        session.output.audio = ClockedOutput(playing, lambda at, callback: loop.call_at(at, callback))
        original_say = session.say

        def say(text, **kwargs):
            handle = original_say(text, **kwargs)
            texts[id(handle)] = text
            return handle

        session.say = say
        session.on("conversation_item_added", self._heard_agent)
        self.lull.attach(session)
        agent = Agent(instructions="Answer the caller.", tools=self.lull.tools(), allow_interruptions=self.interruptions)
        await session.start(agent)
        self.agent = agent
        start = loop.time()
        await (session.say(QUESTION)).wait_for_playout()  # the agent's own turn: the question
        for at, words, seconds in self.caller:
            await asyncio.sleep(max(0.0, start + at - loop.time()))
            vad.start()
            await asyncio.sleep(seconds)
            vad.end()
            await asyncio.sleep(0.05)
            stt.final(words)
        await asyncio.sleep(max(0.0, start + self.seconds - loop.time()))
        await session.aclose()

    def _heard_agent(self, ev) -> None:
        item = ev.item
        if getattr(item, "role", None) == "assistant" and item.text_content and item.text_content != QUESTION:
            if item.text_content not in self.lull_said:
                self.llm_said.append(item.text_content)

    def readings(self) -> list[dict]:
        return [data for kind, data in self.lull.notes if kind == "model_reading"]

    def traces(self, kind: str) -> list:
        return [e for _, e in self.lull.effects if type(e).__name__ == "Trace" and e.kind == kind]

    def prompts(self, kind: str) -> list[str]:
        return [e.text for _, e in self.lull.effects if type(e) is RequestPrompt and e.kind == kind]


def test_the_model_calling_caller_needs_time_holds_the_caller_though_lulls_reader_hears_an_answer():
    call = Call([("wife", "tool:caller_needs_time"), ("found", "Great, go ahead.")],
                [(3.0, "my wife has the card", 1.0), (25.0, "found it", 0.8)], seconds=30).run()
    assert call.prompts("acknowledgement") == ["Sure, take your time."]
    held = [t for t, e in call.lull.effects if type(e) is RequestPrompt and e.kind == "reminder" and t < 25_000]
    assert held == []  # held 20 s: no reminder while the caller was away
    assert call.llm_said == ["Great, go ahead."]  # the tool asked for no reply: one voice each turn
    first = call.readings()[0]
    assert (first["model"], first["lull"], first["agree"], first["via"]) == ("wait_request", "answer", False, "livekit_tool")
    assert "held" in [t.state for t in call.traces("state")]
    assert not [e for _, e in call.lull.inputs if e.kind == "tool_started"]  # Lull's own tool is not a tool wait


def test_the_llm_replying_is_an_answer_and_lull_says_nothing_over_it():
    call = Call([("moment", "Of course, take all the time you need.")], [(3.0, "just a moment", 1.0)], seconds=9,
                meanings={"just a moment": "wait_request"}).run()
    assert call.prompts("acknowledgement") == []
    assert call.llm_said == ["Of course, take all the time you need."]
    reading = call.readings()[0]
    assert (reading["model"], reading["lull"], reading["agree"], reading["via"]) == ("answer", "wait_request", False, "livekit_reply")


def test_two_calls_for_time_in_one_pause_get_one_acknowledgement():
    call = Call([("hold", "tool:caller_needs_time"), ("sec", "tool:caller_needs_time")],
                [(3.0, "hold on", 0.6), (8.0, "one sec", 0.5)], seconds=14).run()
    assert call.prompts("acknowledgement") == ["Sure, take your time."]
    assert [(r["turn"], r["model"]) for r in call.readings()] == [("user-1", "wait_request"), ("user-2", "wait_request")]


def test_a_tool_call_for_an_older_turn_after_the_caller_spoke_again_is_stale():
    call = Call([("ready", "Great."), ("hmm", "tool:caller_needs_time", 2.0)],
                [(3.0, "hmm", 0.4), (4.0, "okay ready", 0.6)], seconds=10, interruptions=False).run()
    stale = [r for r in call.readings() if r["stale"]]
    assert [(r["turn"], r["model"]) for r in stale] == [("user-1", "wait_request")]
    assert [t.reason for t in call.traces("stale_rejected")] == ["superseded_turn"]
    assert call.prompts("acknowledgement") == []


def test_the_caller_back_from_a_hold_is_asked_again_by_lull_and_the_model_knew_they_might_be():
    call = Call([("hold", "tool:caller_needs_time"), ("back", "tool:caller_is_back"), ("four", "Thanks.")],
                [(3.0, "hold on a second", 1.0), (12.0, "okay I'm back", 0.8), (18.0, "four eight two one", 1.5)],
                seconds=24).run()
    assert [r["model"] for r in call.readings()] == ["wait_request", "ready", "answer"]
    assert call.prompts("acknowledgement") == ["Sure, take your time."]
    assert call.prompts("restate") == [QUESTION]  # the question again, said by Lull (L7), not the LLM
    assert call.llm_said == ["Thanks."]
    notes = [any(text == HOLD_NOTE for _, text in context) for context in call.llm.contexts]
    assert notes[:2] == [False, True]  # told while the caller was away, when their return was read
    assert not any(item.text_content == HOLD_NOTE for item in call.agent.chat_ctx.items if item.type == "message")


def test_a_livekit_call_beside_an_llm_journals_both_readings_and_replays_clean(tmp_path):
    folder = tmp_path / "call"
    call = Call([("hold", "tool:caller_needs_time"), ("four", "Thanks.")],
                [(3.0, "hold on", 0.6), (10.0, "it is four eight two one", 1.5)], seconds=16,
                meanings={"it is four eight two one": "wait_request"}, journal_dir=folder).run()
    text = (folder / "journal.jsonl").read_text()
    assert "four eight two one" not in text
    readings = [r for r in map(json.loads, text.splitlines()[1:]) if r.get("effect") == "Observation"]
    # the reader (scripted) made a wait of the code, but words that are mostly digits answer
    # (model_reading.lull_meaning): the two readings agree there
    assert [(r["model"], r["lull"], r["agree"]) for r in readings] == [("wait_request", "answer", False), ("answer", "answer", True)]
    assert call.readings()[0]["words"] == "hold on"
    assert replay(folder).verdict == "CLEAN"
