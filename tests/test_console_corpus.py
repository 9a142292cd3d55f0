"""The corpus screen (F11): response-time histograms per question with the ladder's waits
on them, coverage, and what the flow running in the console would change, at 80x24 and
160x48; an edit applied on the prompts screen starts the what-if again."""

from __future__ import annotations

import asyncio
import functools

import pytest
from console_fixtures import Clock, SilentBackend, compile_data, quick_flow_data

from console.app import LullApp
from console.prompts import apply_to_call
from console.screens.rehearse import panel_text
from console.widgets.histogram import ResponseHistogram
from sessions.population import Population
from sessions.simulate import simulate_corpus


def run_async(test):
    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        asyncio.run(test(*args, **kwargs))

    return wrapper


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus") / "calls"
    simulate_corpus(root, "reference_code", None, 40, 3, Population(), workers=1)
    return root


def _app(corpus_dir):
    data = quick_flow_data()  # the shipped flow with quick waits: it would remind far more
    return LullApp(compile_data(data), flow_document=data, backend=SilentBackend(), clock=Clock(),
                   corpus_dir=corpus_dir)


async def _settle(app, pilot, until):
    for _ in range(200):
        await app.workers.wait_for_complete()
        await pilot.pause(0.05)
        if until():
            return
    raise AssertionError("the corpus screen never showed what it read")


def _whatif(screen) -> str:
    return panel_text(screen.query_one("#corpus-whatif"))


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
@run_async
async def test_the_corpus_screen_shows_histograms_waits_coverage_and_the_whatif(corpus, size):
    app = _app(corpus)
    async with app.run_test(size=size) as pilot:
        await pilot.press("f11")
        screen = app.screen
        await _settle(app, pilot, lambda: "the whole corpus" in _whatif(screen))
        assert [q["question"] for q in screen.questions] == ["ask_code", "confirm_code"]
        stages = panel_text(screen.query_one("#corpus-stages"))
        assert "quiet_wait" in stages and "8.0s" in stages  # the recorded flow's first wait
        about = panel_text(screen.query_one("#corpus-about"))
        assert "40 sessions of reference_code" in " ".join(about.split())
        whatif = " ".join(_whatif(screen).split())
        assert "the whole corpus, 40 sessions" in whatif
        before, after = screen.whatif_reminders
        assert after > before, "a ladder of 0.4 s waits reminds more than the recorded 8 s one"
        histogram = screen.query_one(ResponseHistogram)
        drawn = histogram.render().plain
        assert "█" in drawn and "quiet_wait" in drawn  # the bars, and the wait marked on them
        assert "edited 0.4s" in drawn  # the running flow's first wait beside the recorded one
        await pilot.press("down")
        await pilot.pause()
        assert "confirm_code" in histogram.render().plain


@run_async
async def test_an_applied_edit_runs_the_whatif_again(corpus):
    app = _app(corpus)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("f11")
        screen = app.screen
        await _settle(app, pilot, lambda: "the whole corpus" in _whatif(screen))
        first_key, (_, quick) = screen.whatif_key, screen.whatif_reminders
        await pilot.press("f2")
        apply_to_call(app.session, app.flow_document, {("ladder", "stages", 0, "wait_ms"): 20000}, "test edit")
        await pilot.press("f11")
        await _settle(app, pilot, lambda: screen.whatif_done not in (None, first_key))
        _, slow = screen.whatif_reminders
        assert slow < quick, "a 20 s first wait reminds less than a 0.4 s one"
        assert "edited 20s" in screen.query_one(ResponseHistogram).render().plain


@run_async
async def test_no_journals_is_said_in_one_line(tmp_path):
    app = _app(tmp_path / "nothing-here")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f11")
        screen = app.screen
        await _settle(app, pilot, lambda: "No journals" in panel_text(screen.query_one("#corpus-about")))


def test_the_progress_knows_how_many_journals_a_folder_holds_but_not_an_archives(corpus, tmp_path):
    from console.screens.corpus import _known_total

    assert _known_total(corpus) == 40
    archived = tmp_path / "archived"
    simulate_corpus(archived, "reference_code", None, 5, 3, Population(), workers=1, archive="zst")
    assert _known_total(archived) is None  # an archive's members are not counted ahead
