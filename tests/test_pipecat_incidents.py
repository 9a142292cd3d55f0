"""`lull incidents run --via pipecat`: every library incident through a real Pipecat
pipeline (its worker, frame queues, Lull's processor, a simulated output transport) on
a virtual-time loop, with the verdict the virtual clock gives; and that loop itself."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

pytest.importorskip("pipecat", reason="the pipecat extra is not installed")

from typer.testing import CliRunner  # noqa: E402

from console.cli import app  # noqa: E402
from sessions.incidents import load_library, run_incident  # noqa: E402
from sessions.replay import replay  # noqa: E402
from voices.pipecat.incidents import run_incident_via_pipecat  # noqa: E402
from voices.virtual_loop import VirtualTimeLoop, run_virtual  # noqa: E402

LIBRARY = load_library()


@pytest.mark.parametrize("incident", LIBRARY, ids=[i.name for i in LIBRARY])
def test_every_library_incident_passes_through_pipecat_as_on_the_virtual_clock(incident, tmp_path):
    outcome, run = run_incident_via_pipecat(incident, record_to=tmp_path / incident.name)
    on_the_clock = run_incident(incident)
    assert outcome.failures == []
    assert outcome.snapshot == on_the_clock.snapshot
    timed = lambda records: [{**r, "at": float(r["at"])} for r in records]  # noqa: E731
    if not any(r.get("effect") == "CancelPrompt" for r in on_the_clock.records):
        # the same decisions, in the same order, at the same times
        assert timed(outcome.records) == timed(on_the_clock.records)
    else:
        # a cut prompt: the transport reports it stopped when its audio is flushed, the
        # virtual clock's endpoint when the audio would have ended; the prompts are the same
        prompts = lambda records: [r for r in timed(records) if r.get("effect") == "RequestPrompt"]  # noqa: E731
        assert prompts(outcome.records) == prompts(on_the_clock.records)
    # and its journal (source: pipecat) replays as decided
    result = replay(tmp_path / incident.name)
    assert result.verdict == "CLEAN", result.describe()


def test_the_steps_go_in_as_pipecats_own_frames_where_it_has_them():
    by_name = {i.name: i for i in LIBRARY}
    _, run = run_incident_via_pipecat(by_name["seven_waits"])
    assert run.as_frames >= 17  # every turn's start, end and words
    _, run = run_incident_via_pipecat(by_name["duplicate_timeout"])
    assert run.as_frames == 0 and run.as_events == 3  # a duplicate timer callback has no frame


def test_lulls_own_wording_is_kept_and_the_callers_digits_masked_in_a_pipecat_journal(tmp_path):
    # the filler "One moment while I check that." was once journaled "0 moment ...":
    # masking Lull's own words made the journal DRIFT on replay
    by_name = {i.name: i for i in LIBRARY}
    run_incident_via_pipecat(by_name["tool_past_filler"], record_to=tmp_path / "filler")
    run_incident_via_pipecat(by_name["seven_waits"], record_to=tmp_path / "answer")
    filler = (tmp_path / "filler" / "journal.jsonl").read_text()
    assert "One moment while I check that." in filler
    answer = (tmp_path / "answer" / "journal.jsonl").read_text()
    values = [json.loads(line).get("value") for line in answer.splitlines() if '"value"' in line]
    assert values and "4821" not in values and "0123" in values
    for folder in ("filler", "answer"):
        assert replay(tmp_path / folder).verdict == "CLEAN"


def test_the_cli_runs_the_library_through_pipecat_and_refuses_an_unknown_way():
    runner = CliRunner()
    result = runner.invoke(app, ["incidents", "run", "--via", "pipecat"])
    assert result.exit_code == 0, result.output
    assert f"{len(LIBRARY)} of {len(LIBRARY)} incidents passed" in result.output
    assert "as LullEventFrame" in result.output
    result = runner.invoke(app, ["incidents", "run", "--via", "pipecats"])
    assert result.exit_code == 2 and "expected core, pipecat or livekit, got 'pipecats'" in result.output


# -- the virtual-time loop ---------------------------------------------------------------


def test_virtual_time_jumps_to_the_next_callback_instead_of_sleeping():
    async def an_hour() -> float:
        loop = asyncio.get_running_loop()
        before = loop.time()
        await asyncio.sleep(3600)
        return loop.time() - before

    assert run_virtual(an_hour()) == pytest.approx(3600)


def test_work_in_a_thread_takes_no_virtual_time():
    gate = threading.Event()

    def slow() -> str:
        gate.wait(5)
        return "done"

    async def main() -> tuple[float, str, list]:
        loop = asyncio.get_running_loop()
        before = loop.time()
        # a timer far ahead must not fire while the thread works
        fired = []
        loop.call_later(10, fired.append, True)
        loop.call_later(0.2, gate.set)  # not reached in virtual time until the thread is done...
        threading.Timer(0.05, gate.set).start()  # ... so a real thread lets it go
        result = await asyncio.to_thread(slow)
        return loop.time() - before, result, list(fired)  # (the loop runs on as it shuts down)

    elapsed, result, fired = run_virtual(main())
    assert result == "done" and elapsed < 0.2 and fired == []


def test_ranks_order_one_instant_and_each_settles_before_the_next():
    order: list[str] = []

    async def chain(name: str) -> None:
        for i in range(3):  # several loop turns: settled before the next rank starts
            order.append(f"{name}{i}")
            await asyncio.sleep(0)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, VirtualTimeLoop)
        for name, rank in (("timer", 2), ("scripted", 0), ("endpoint", 1)):
            loop.call_at_ranked(5.0, rank, lambda n=name: loop.create_task(chain(n)))
        await asyncio.sleep(6)

    run_virtual(main())
    assert order == ["scripted0", "scripted1", "scripted2", "endpoint0", "endpoint1", "endpoint2",
                     "timer0", "timer1", "timer2"]
