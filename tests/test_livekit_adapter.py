"""`LullLadder` beside an agent's own turns, in a real LiveKit AgentSession on virtual
time: the agent's words become the question, a silent caller is reminded through the
session's TTS, a caller who speaks is heard through the session's VAD and STT, the
session's close ends the call, and the journal replays CLEAN."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("livekit.agents", reason="the livekit extra is not installed")

from livekit.agents import Agent, AgentSession  # noqa: E402

from ladder import RequestPrompt  # noqa: E402
from sessions.replay import replay  # noqa: E402
from voices.framework_incidents import IncidentWords  # noqa: E402
from voices.livekit import LullLadder  # noqa: E402
from voices.livekit import quiet_livekit_logs  # noqa: E402
from voices.livekit.simulated import ClockedOutput, ScriptedSTT, ScriptedVAD, SilentInput, SilentTTS  # noqa: E402
from voices.virtual_loop import run_virtual  # noqa: E402

quiet_livekit_logs()
MS_PER_WORD = 300


def _session(loop):
    vad, stt = ScriptedVAD(), ScriptedSTT()
    session = AgentSession(vad=vad, stt=stt, tts=SilentTTS(), user_away_timeout=None)
    session.input.audio = SilentInput()

    def playing():
        speech = session.current_speech
        words = len(texts.get(id(speech), "one").split())
        return 100.0, words * MS_PER_WORD

    texts: dict[int, str] = {}
    session.output.audio = ClockedOutput(playing, lambda at, callback: loop.call_at(at, callback))
    return session, vad, stt, texts


def test_the_agents_turn_is_the_question_a_silent_caller_is_reminded_and_a_caller_who_speaks_is_heard(tmp_path):
    said: list[str] = []

    async def call():
        loop = asyncio.get_running_loop()
        session, vad, stt, texts = _session(loop)
        lull = LullLadder(matcher=IncidentWords(), journal_dir=tmp_path / "call", services={"llm": "the test's own turns"},
                          on_prompt=lambda p: said.append(p.text))
        lull.attach(session)
        # the output times Lull's prompts by their words too
        original_say = session.say

        def say(text, **kwargs):
            handle = original_say(text, **kwargs)
            texts[id(handle)] = text
            return handle

        session.say = say
        await session.start(Agent(instructions="the test speaks the agent's turns"))
        # the agent's own turn (an LLM's, here said by the application): the question
        handle = session.say("What is the number on your meter?")
        await handle.wait_for_playout()
        asked = [e for _, e in lull.inputs if e.kind == "ask_question"]
        assert [e.text for e in asked] == ["What is the number on your meter?"]
        # the caller says nothing: the first window (8 s) runs out and the reminder is said
        await asyncio.sleep(16)
        reminders = [e for _, e in lull.effects if type(e) is RequestPrompt and e.kind == "reminder"]
        assert len(reminders) == 1 and said == [reminders[0].text]
        assert lull.core.state.value == "listening"
        # the caller speaks (the session's VAD and STT): a turn, and the words answer
        vad.start()
        await asyncio.sleep(1.5)
        vad.end()
        await asyncio.sleep(0.1)
        stt.final("it's four four seven one")
        await asyncio.sleep(0.5)
        kinds = [e.kind for _, e in lull.inputs]
        assert kinds[-3:] == ["turn_started", "turn_ended", "turn_interpreted"]
        assert lull.inputs[-1][1].intent == "answer"
        assert lull.core.answer_for(asked[0].question) is not None
        await session.aclose()
        assert lull.inputs[-1][1].kind == "end_session"

    run_virtual(call())
    journal = (tmp_path / "call" / "journal.jsonl").read_text()
    assert json.loads(journal.splitlines()[0])["source"] == "livekit"
    heard = [r["event"] for r in map(json.loads, journal.splitlines()[1:]) if r.get("type") == "input"]
    words = " ".join(str(e.get("value") or "") + " " + str(e.get("text") or "") for e in heard)
    assert "four four seven one" not in words and "4471" not in words.replace(" ", "")  # masked as it came in
    result = replay(tmp_path / "call")
    assert result.verdict == "CLEAN", result.describe()


def test_a_session_with_its_own_away_timer_is_refused_in_one_line():
    async def attach():
        session = AgentSession(tts=SilentTTS())  # LiveKit's default: away after 15 s
        with pytest.raises(ValueError, match="user_away_timeout=15.0: Lull owns no-input"):
            LullLadder(matcher=IncidentWords()).attach(session)

    run_virtual(attach())
