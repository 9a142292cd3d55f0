"""What Lull's whisper is told before it hears the answer to a question
(voices.understanding.recogniser_context, issue 48 item 4): the question as the agent
said it, without its placeholders (so no value the caller gave is in it), the acts
callers say between answers, and the flow's routes; every backend's decode options
carry it, and the bench hears phrasings with the options a call uses."""

from __future__ import annotations

from pathlib import Path

import pytest

import voices.understanding.recogniser_context as recogniser_context
from ladder import PlaybackCompleted, RequestPrompt
from ladder.events import CallerUtterance, StartCall
from ladder.flow.runtime import FlowRuntime
from sessions.flowfiles import load_flow
from voices.stt import SHORT_ANSWER_DECODE
from voices.backends.voice import decode_options, options_for, recogniser_context as runtime_context
from voices.understanding.heard_phrasings import question_options
from voices.understanding.recogniser_context import CALLER_ACTS_SAID, MAX_CHARS, context_for, question_said

FLOWS = Path(__file__).parent / "flows" / "yardstick2"


def _heard_out(runtime: FlowRuntime, effects, now: int) -> None:
    for effect in effects:
        if isinstance(effect, RequestPrompt):
            _heard_out(runtime, runtime.handle(PlaybackCompleted(effect.token), now), now)


def asked(flow_name: str) -> FlowRuntime:
    """A call at the flow's first question, every prompt heard to its end."""
    runtime = FlowRuntime(load_flow(str(FLOWS / f"{flow_name}.json")))
    _heard_out(runtime, runtime.handle(StartCall(), 0), 0)
    while runtime.asking is None:
        _heard_out(runtime, runtime.handle_timer(runtime.next_deadline()), runtime.next_deadline())
    return runtime


def test_the_question_routes_and_acts_in_that_order():
    spec = load_flow(str(FLOWS / "car_claim.json")).spec
    said = context_for(spec, "ask_reg")
    assert said.startswith("What's the registration number of the car you're claiming for?")
    assert CALLER_ACTS_SAID in said
    assert said.endswith("Claim on the online form instead. Speak to a claims handler.")
    assert "repeat the question" not in said  # asking again is among the acts already
    assert said.index("registration") < said.index(CALLER_ACTS_SAID) < said.index("claims handler")


def test_a_placeholder_is_left_out_so_no_value_reaches_the_prompt():
    assert question_said("I heard {reg_plate}. Is that right?") == "I heard. Is that right?"
    assert question_said("So {a} and {b} , right ?") == "So and, right?"
    runtime = asked("car_claim")
    _heard_out(runtime, runtime.handle(CallerUtterance("user-1", 1, "w r sixty eight b k o", None, 0.0), 10_000), 10_000)
    assert runtime.asking is not None and runtime.asking[1] == "confirm_reg"
    said = runtime_context(runtime)
    assert said.startswith("I heard. Is that right?") and "sixty" not in said and "{" not in said


def test_a_long_flow_keeps_its_prompt_within_whispers_bound():
    spec = load_flow(str(FLOWS / "car_claim.json")).spec
    many = spec.model_copy(update={"routes": spec.routes * 40})
    assert len(context_for(many, "ask_reg")) <= MAX_CHARS
    assert context_for(many, None).startswith(CALLER_ACTS_SAID)


def test_every_decode_at_a_question_is_told_it_but_a_code_and_none_without_a_flow():
    runtime = asked("car_claim")
    options = decode_options(runtime)
    assert set(options) == {"initial_prompt"}  # the full window
    assert options["initial_prompt"].startswith("What's the registration number")
    assert question_options(load_flow(str(FLOWS / "car_claim.json"))) == options
    # a code keeps its short windows, untold: a prompt cost the codes
    assert decode_options(asked("library_renewal")) == SHORT_ANSWER_DECODE
    assert question_options(load_flow(str(FLOWS / "library_renewal.json"))) == SHORT_ANSWER_DECODE
    # a yes/no keeps its short windows and is told the question: "no" is heard "know" without it
    told = decode_options(asked("broadband_fault"))
    assert {k: v for k, v in told.items() if k != "initial_prompt"} == SHORT_ANSWER_DECODE
    assert told["initial_prompt"].startswith("To check your connection")
    assert question_options(load_flow(str(FLOWS / "broadband_fault.json"))) == told
    assert decode_options(None) == {}


def test_it_can_be_left_out_to_compare(monkeypatch):
    monkeypatch.setattr(recogniser_context, "ENABLED", False)
    assert "initial_prompt" not in decode_options(asked("car_claim"))
    assert options_for(None, "anything") == {}


def test_the_bench_cli_takes_no_context(monkeypatch):
    from typer.testing import CliRunner

    from console.cli._app import app

    seen = {}

    def fake_heard_yardstick(*args, **kwargs):
        seen["enabled"] = recogniser_context.ENABLED
        raise SystemExit(0)

    monkeypatch.setattr(recogniser_context, "ENABLED", True)
    monkeypatch.setattr("voices.understanding.heard_phrasings.heard_yardstick", fake_heard_yardstick)
    CliRunner().invoke(app, ["bench", "intents", "--yardstick", str(FLOWS), "--spoken", "--no-context"])
    assert seen == {"enabled": False}


@pytest.mark.parametrize("flow", sorted(p.stem for p in FLOWS.glob("*.json")))
def test_every_yardstick_flows_prompt_names_its_question(flow):
    compiled = load_flow(str(FLOWS / f"{flow}.json"))
    stage = next(s for s in compiled.spec.stages if s.collect)
    if compiled.spec.slots[stage.collect[0]].type == "digits":
        assert "initial_prompt" not in question_options(compiled)
        return
    prompt = question_options(compiled)["initial_prompt"]
    assert prompt.startswith(question_said(stage.say)[:30]) and "{" not in prompt
