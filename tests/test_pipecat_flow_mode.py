"""LullProcessor in flow mode: a designer's own flow (tests/flows/pharmacy_refill.json)
drives the call inside a Pipecat pipeline, on virtual time. The live session keeps the
journal and the timers on the pipeline's clock; the caller's turns come as Pipecat's
frames; the pipeline ends itself when the flow closes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

pytest.importorskip("pipecat", reason="the pipecat extra is not installed")

from pipecat.frames.frames import TranscriptionFrame, UserStartedSpeakingFrame, UserStoppedSpeakingFrame  # noqa: E402
from pipecat.pipeline.pipeline import Pipeline  # noqa: E402
from pipecat.pipeline.worker import PipelineParams, PipelineWorker  # noqa: E402
from pipecat.processors.frame_processor import FrameDirection  # noqa: E402
from pipecat.workers.runner import WorkerRunner  # noqa: E402

from sessions.flowfiles import load_flow  # noqa: E402
from sessions.replay import replay  # noqa: E402
from redaction_checks import journal_leaks  # noqa: E402
from sessions.virtual import Playback  # noqa: E402
from voices.pipecat import LullProcessor  # noqa: E402
from voices.pipecat.incidents import SimulatedOutput, _Head  # noqa: E402
from voices.virtual_loop import run_virtual  # noqa: E402

PHARMACY = Path(__file__).parent / "flows" / "pharmacy_refill.json"


class NoIntent:
    """The flow reads the prescription number and the yes from the words themselves."""

    ready = True

    def match(self, text):
        return None, 0.0


async def call(folder: Path, caller: list[tuple[float, str]], limit_s: float = 400) -> tuple[LullProcessor, list[str], float]:
    """One call: the caller's (second, words) turns said at those virtual times."""
    loop = asyncio.get_running_loop()
    lull = LullProcessor(flow=load_flow(str(PHARMACY)), matcher=NoIntent(), journal_dir=folder)
    head = _Head()
    output = SimulatedOutput(Playback(), loop)  # type: ignore[arg-type]
    worker = PipelineWorker(Pipeline([head, lull, output]), params=PipelineParams(enable_heartbeats=False),
                            idle_timeout_secs=None, cancel_on_idle_timeout=False, enable_rtvi=False)
    said: list[str] = []
    lull.on_line = lambda who, text: said.append(f"{who}: {text}")

    async def caller_turns() -> None:
        for at, words in caller:
            await asyncio.sleep(max(0.0, at - loop.time()))
            for frame in (UserStartedSpeakingFrame(), UserStoppedSpeakingFrame(), TranscriptionFrame(words, "caller", "")):
                await head.push_frame(frame, FrameDirection.DOWNSTREAM)

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    started = loop.time()
    feeder = asyncio.ensure_future(caller_turns())
    await asyncio.wait_for(runner.run(), limit_s)  # ends when the flow closes the call
    feeder.cancel()
    return lull, said, loop.time() - started


def kinds(folder: Path) -> list[str]:
    lines = [json.loads(line) for line in (folder / "journal.jsonl").read_text().splitlines()]
    return [r["kind"] for r in lines if r.get("type") == "decision" and r.get("effect") == "RequestPrompt"]


def test_a_silent_caller_gets_the_flows_ladder_and_the_pipeline_ends_itself(tmp_path):
    lull, said, took = run_virtual(call(tmp_path / "silent", []))
    prompts = kinds(tmp_path / "silent")
    assert prompts[:2] == ["statement", "question"]
    assert "reminder" in prompts and prompts[-1] == "close", prompts
    assert lull._session.closed.is_set() and took < 400  # ended by the flow, not the limit
    assert any("pharmacy" in line for line in said)  # the flow's own words, through the pipeline
    assert replay(tmp_path / "silent").verdict == "CLEAN"


def test_a_caller_who_answers_in_pipecat_frames_gets_the_number_read_back(tmp_path):
    lull, said, _ = run_virtual(call(tmp_path / "answers", [(9.0, "it's 4 8 2 1 7 7"), (16.0, "yes")]))
    agent = [line for line in said if line.startswith("agent")]
    assert any("4 8 2 1 7 7" in line or "482177" in line for line in agent), said
    journal = (tmp_path / "answers" / "journal.jsonl").read_text()
    assert journal_leaks(tmp_path / "answers" / "journal.jsonl", "482177") == []  # redacted
    header = json.loads(journal.splitlines()[0])
    assert header["source"] == "pipecat" and header["pipeline"]["mode"] == "flow"
    assert replay(tmp_path / "answers").verdict == "CLEAN"
