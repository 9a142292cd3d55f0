"""`lull bench core`: the schedule, both drivers, and the transcription of seed 000's
reference ladder (which must pass the seed's own checks). No timings asserted here."""

import json
import subprocess

from test_cli_errors import LULL

from sessions.bench import _drive_core, _drive_reference, core_schedule
from sessions.seed_ladder import Ladder


def test_the_reference_ladder_passes_the_seeds_own_checks():
    # the seed's __main__ block, as printed in seed 000
    ladder = Ladder()
    old = ladder.arm(0, 10)
    assert ladder.fire(old, 9) == "ignore"
    assert ladder.speech() == "cancel_prompt_and_collect"
    assert ladder.fire(old, 10) == "ignore"
    t = ladder.arm(10, 10)
    assert ladder.fire(t, 20) == "gentle_check"
    assert ladder.fire(t, 20) == "ignore"
    ladder.playback_complete(ladder.prompt_token)
    held = ladder.arm(20, 10)
    assert ladder.hold() == "hold"
    assert ladder.fire(held, 30) == "ignore"
    ladder.resume()
    t2 = ladder.arm(30, 10)
    assert ladder.fire(t2, 40) == "offer_route"
    ladder.playback_complete(ladder.prompt_token)
    t3 = ladder.arm(40, 10)
    assert ladder.fire(t3, 50) == "close_incomplete"
    assert ladder.speech() == "closed"
    assert ladder.fire(t3, 60) == "ignore"
    assert ladder.actions == ["gentle_check", "offer_route", "close_incomplete"]
    h = Ladder(deadline=15)
    h.hold()
    assert h.expire(15) == "closed"
    x = Ladder()
    a = x.arm(0, 1)
    x.fire(a, 1)
    prior = x.prompt_token
    x.speech()
    b = x.arm(2, 1)
    x.fire(b, 3)
    x.playback_complete(prior)
    assert x.state == "prompting"
    x.playback_complete(x.prompt_token)
    assert x.state == "collecting"


def test_the_schedule_is_the_same_every_run_and_has_every_kind_of_step():
    schedule = core_schedule(5000, seed=3)
    assert schedule == core_schedule(5000, seed=3) and len(schedule) == 5000
    assert {what for what, _, _ in schedule} == {"ask", "started", "completed", "timer", "turn_started", "turn_ended", "interpreted"}
    assert {intent for what, _, intent in schedule if what == "interpreted"} >= {"answer", "wait_request", "ready", "backchannel"}


def test_both_drivers_take_every_event_of_the_schedule():
    schedule = core_schedule(3000)
    assert _drive_core(schedule) == len(schedule) == _drive_reference(schedule)


def test_bench_core_prints_both_rates_and_the_ratio():
    result = subprocess.run([LULL, "bench", "core", "--events", "2000", "--rounds", "1", "--json"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["events"] == 2000 and figures["core_events_per_s"] > 0 and figures["reference_events_per_s"] > 0
    assert figures["ratio"] == round(figures["reference_events_per_s"] / figures["core_events_per_s"], 1)
