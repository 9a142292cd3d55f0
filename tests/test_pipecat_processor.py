"""LullProcessor in a real Pipecat pipeline (pipecat.tests.utils.run_test: its worker,
frame queues and clock), ladder mode: the frame mapping, frame by frame, including the
orders Pipecat produces under load. The pipelines run on virtual time
(voices.virtual_loop): the waits take no wall time, and a busy machine cannot
stretch one past a window."""

from __future__ import annotations


import pytest

pytest.importorskip("pipecat", reason="the pipecat extra is not installed")

from pipecat.frames.frames import (  # noqa: E402
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    FunctionCallInProgressFrame,
    FunctionCallResultFrame,
    InterruptionFrame,
    LLMTextFrame,
    TranscriptionFrame,
    TTSSpeakFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
)
from pipecat.tests.utils import SleepFrame, run_test  # noqa: E402

from ladder import LadderPolicy, Stage  # noqa: E402
from voices.pipecat import LullProcessor  # noqa: E402
from voices.virtual_loop import run_virtual  # noqa: E402

POLICY = LadderPolicy(
    stages=(
        Stage(name="quiet_wait", wait_ms=300),
        Stage(name="gentle_check", wait_ms=300, prompt="Take your time."),
        Stage(name="safe_close", wait_ms=100, prompt="I'll end the call here.", closes=True),
    ),
    episode_ms=20_000, hold_ms=600, hold_budget_ms=600, still_waiting_ms=None, watchdog_ms=3000,
)


class Phrases:
    """A matcher that knows a few phrases: the frame mapping is what these tests are
    about (the real classifier has a test of its own, below)."""

    MEANING = {"hang on a second": "wait_request", "one moment please": "wait_request", "okay I'm back": "ready"}

    def match(self, text):
        intent = self.MEANING.get(text)
        return intent, 1.0 if intent else 0.0


def lull_processor():
    return LullProcessor(POLICY, matcher=Phrases())


def said(down) -> list[str]:
    return [f.text for f in down if isinstance(f, TTSSpeakFrame)]


def kinds(processor) -> list[str]:
    return [e.kind for _, e in processor.inputs]


def traces(processor, kind) -> list:
    return [e for _, e in processor.effects if type(e).__name__ == "Trace" and e.kind == kind]


def bot_turn(words="What is your account number?"):
    # the LLM's words reach the processor (on their way to the TTS) before the transport
    # says the bot started speaking them; system frames jump the queue, so wait between
    return [LLMTextFrame(words), SleepFrame(sleep=0.1), BotStartedSpeakingFrame(), SleepFrame(sleep=0.05),
            BotStoppedSpeakingFrame()]


def run(processor, frames):
    return run_virtual(run_test(processor, frames_to_send=frames))[0]


def test_after_the_bots_question_silence_gets_the_reminder_through_the_pipelines_tts():
    lull = lull_processor()
    down = run(lull, [*bot_turn(), SleepFrame(sleep=1.0)])  # the window is 300 ms: room for a busy machine
    assert said(down) == ["Take your time."]  # pushed downstream, to the TTS
    ask = next(e for _, e in lull.inputs if e.kind == "ask_question")
    assert ask.text == "What is your account number?"
    # the bot already said it: its playback started and ended at the stop frame, not again
    assert kinds(lull)[:3] == ["ask_question", "playback_started", "playback_completed"]
    assert [e.kind for _, e in lull.effects if type(e).__name__ == "RequestPrompt"] == ["question", "reminder"]


def test_bot_speaking_frames_of_lulls_prompt_are_its_playback_and_the_window_arms_from_their_end():
    lull = lull_processor()
    run(lull, [*bot_turn(), SleepFrame(sleep=1.0), BotStartedSpeakingFrame(), SleepFrame(sleep=0.1),
               BotStoppedSpeakingFrame(), SleepFrame(sleep=0.1)])
    reminder = next(e for _, e in lull.effects if type(e).__name__ == "RequestPrompt" and e.kind == "reminder")
    started = [e for _, e in lull.inputs if e.kind == "playback_started"]
    completed = [e for _, e in lull.inputs if e.kind == "playback_completed"]
    assert started[-1].token == completed[-1].token == reminder.token
    armed = [t for t in traces(lull, "window_armed") if t.reason == "observed"]
    assert armed[-1].at >= [t for t, e in lull.inputs if e.kind == "playback_completed"][-1]
    assert lull.core.prompts[reminder.token].status.value == "completed"


def test_the_caller_asking_for_time_is_held_not_reminded():
    lull = lull_processor()
    down = run(lull, [*bot_turn(), UserStartedSpeakingFrame(), TranscriptionFrame("hang on a second", "u", ""),
                      UserStoppedSpeakingFrame(), SleepFrame(sleep=0.4)])
    assert said(down) == ["Sure, take your time."]  # the acknowledgement, and no reminder
    interpreted = [e for _, e in lull.inputs if e.kind == "turn_interpreted"]
    assert [e.intent for e in interpreted] == ["wait_request"]


def test_the_hold_starts_when_the_bot_has_said_the_acknowledgement():
    lull = lull_processor()
    down = run(lull, [*bot_turn(), UserStartedSpeakingFrame(), TranscriptionFrame("hang on a second", "u", ""),
                      UserStoppedSpeakingFrame(), SleepFrame(sleep=0.3), BotStartedSpeakingFrame(),
                      SleepFrame(sleep=0.05), BotStoppedSpeakingFrame(), SleepFrame(sleep=0.3)])
    assert said(down) == ["Sure, take your time."]
    [hold] = traces(lull, "hold_armed")
    stopped = [t for t, e in lull.inputs if e.kind == "playback_completed"][-1]
    assert hold.at == stopped and hold.detail["due"] == stopped + POLICY.hold_ms


def test_an_answer_ends_the_episode_and_lull_says_nothing_more():
    lull = lull_processor()
    down = run(lull, [*bot_turn(), UserStartedSpeakingFrame(), TranscriptionFrame("it's four eight two one", "u", ""),
                      UserStoppedSpeakingFrame(), SleepFrame(sleep=0.8)])
    assert said(down) == []
    assert lull.core.episode.outcome == "answered"


def test_a_transcription_after_the_users_stop_is_read_when_it_comes():
    lull = lull_processor()
    run(lull, [*bot_turn(), UserStartedSpeakingFrame(), UserStoppedSpeakingFrame(), SleepFrame(sleep=0.05),
               TranscriptionFrame("one moment please", "u", ""), SleepFrame(sleep=0.1)])
    order = [k for k in kinds(lull) if k.startswith("turn_")]
    assert order == ["turn_started", "turn_ended", "turn_interpreted"]
    assert [e.intent for _, e in lull.inputs if e.kind == "turn_interpreted"] == ["wait_request"]


def test_the_user_starting_before_the_bot_stopped_still_gets_the_bots_question_asked_first():
    # under load the user's start can reach the processor before the bot's stop
    lull = lull_processor()
    down = run(lull, [LLMTextFrame("Your postcode?"), SleepFrame(sleep=0.02), BotStartedSpeakingFrame(),
                      SleepFrame(sleep=0.02), UserStartedSpeakingFrame(), BotStoppedSpeakingFrame(),
                      TranscriptionFrame("it's AB1 2CD", "u", ""), UserStoppedSpeakingFrame(), SleepFrame(sleep=0.8)])
    assert kinds(lull)[:2] == ["turn_started", "ask_question"]
    # the caller who answered over the end of the question is not reminded of it
    assert said(down) == [] and lull.core.episode.outcome == "answered"


def test_a_function_call_started_before_the_bot_stopped_is_a_tool_wait_not_caller_silence():
    lull = lull_processor()
    down = run(lull, [LLMTextFrame("Let me check."), SleepFrame(sleep=0.02), BotStartedSpeakingFrame(),
                      FunctionCallInProgressFrame(function_name="lookup", tool_call_id="c1", arguments={}),
                      SleepFrame(sleep=0.02), BotStoppedSpeakingFrame(), SleepFrame(sleep=0.45),
                      FunctionCallResultFrame(function_name="lookup", tool_call_id="c1", arguments={}, result={"ok": True}),
                      SleepFrame(sleep=0.05)])
    assert [e.kind for _, e in lull.inputs if e.kind.startswith("tool_")] == ["tool_started", "tool_finished"]
    assert said(down) == []  # the 300 ms window would have reminded a caller waiting on the tool


def test_an_interruption_while_lulls_prompt_plays_is_its_interruption():
    lull = lull_processor()
    run(lull, [*bot_turn(), SleepFrame(sleep=1.0), BotStartedSpeakingFrame(), InterruptionFrame(),
               UserStartedSpeakingFrame(), SleepFrame(sleep=0.05)])
    interrupted = [e for _, e in lull.inputs if e.kind == "playback_interrupted"]
    reminder = next(e for _, e in lull.effects if type(e).__name__ == "RequestPrompt" and e.kind == "reminder")
    assert [e.token for e in interrupted] == [reminder.token]


def test_by_default_the_classifier_reads_the_callers_words_and_an_answer_ends_the_episode():
    lull = LullProcessor(POLICY)  # the default matcher: the classifier on Lull's shared phrases
    run(lull, [*bot_turn(), UserStartedSpeakingFrame(), TranscriptionFrame("um, could you hold on a sec", "u", ""),
               UserStoppedSpeakingFrame(), SleepFrame(sleep=0.2)])
    assert [e.intent for _, e in lull.inputs if e.kind == "turn_interpreted"] == ["wait_request"]
    lull = LullProcessor(POLICY)
    run(lull, [*bot_turn(), UserStartedSpeakingFrame(), TranscriptionFrame("it's four eight two one", "u", ""),
               UserStoppedSpeakingFrame(), SleepFrame(sleep=0.2)])
    assert [e.intent for _, e in lull.inputs if e.kind == "turn_interpreted"] == ["answer"]
    assert lull.core.episode.outcome == "answered"


def test_a_pipecat_call_writes_a_journal_that_replays_clean_with_the_digits_masked(tmp_path):
    from sessions.journal import read_journal
    from sessions.replay import replay

    lull = LullProcessor(POLICY, matcher=Phrases(), journal_dir=tmp_path / "call",
                         services={"stt": "WhisperSTTService", "tts": "PiperTTSService"})
    run(lull, [*bot_turn("I have your card ending 4821. Is that right?"), UserStartedSpeakingFrame(),
               TranscriptionFrame("okay I'm back", "u", ""), UserStoppedSpeakingFrame(), SleepFrame(sleep=0.45)])
    journal = read_journal(tmp_path / "call")
    assert journal.header["source"] == "pipecat"
    assert journal.header["pipeline"]["pipecat"] == "1.14.0" and journal.header["pipeline"]["stt"] == "WhisperSTTService"
    texts = [r.get("text") or (r.get("event") or {}).get("text") or "" for r in journal.records]
    assert any("I have your card ending" in t for t in texts)
    assert not any("4821" in t for t in texts), texts  # masked in the question and its restates
    result = replay(tmp_path / "call")
    assert result.verdict == "CLEAN", result.describe()
    assert result.inputs >= 6
