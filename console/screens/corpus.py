"""The corpus screen: how callers took to answer over a corpus of journals, and what the
flow as edited in this console would change (S9, S4 over a corpus).

Reading runs in thread workers that only post messages: the journals first (timing and
coverage), then the what-if under the running call's flow, on a sample of the corpus
first and the whole corpus when that is done. An edit applied on the prompts screen
starts the what-if again when this screen shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Header, Label, ListItem, ListView, ProgressBar, Static
from textual.worker import get_current_worker

from ..widgets.footer import FittingFooter
from ..widgets.histogram import ResponseHistogram

SAMPLE = 200  # journals in the first, quick what-if


class Cancelled(Exception):
    """The worker was replaced by a newer one: stop reading."""


@dataclass
class CorpusProgress(Message):
    what: str
    done: int
    total: int | None = None  # journals in all, when known (folders; an archive's members are not counted ahead)


@dataclass
class CorpusRead(Message):
    root: Path
    timing: dict  # sessions.timing.summary
    spoke_s: dict[str, list[float]]  # question -> response times (s) of callers who spoke
    coverage: dict
    problem: str | None = None


@dataclass
class WhatIfRead(Message):
    summary: dict
    sample: bool
    flow_key: str


def _first_wait(question: dict) -> float | None:
    return question["stages"][0]["wait_ms"] / 1000 if question.get("stages") else None


class CorpusScreen(Screen):
    AUTO_FOCUS = "#corpus-questions"
    BINDINGS = [
        Binding("question_mark", "app.help", "Help", id="help", key_display="?"),
        Binding("f1", "app.switch_mode('rehearse')", "Rehearse", id="rehearse"),
        Binding("f2", "app.switch_mode('editor')", "Prompts", id="editor"),
        Binding("f3", "app.switch_mode('incidents')", "Incidents", id="incidents"),
        Binding("f5", "reload", "Read again", id="corpus_reload"),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.timing: dict | None = None
        self.spoke_s: dict[str, list[float]] = {}
        self.questions: list[dict] = []
        self.whatif: dict | None = None
        self.whatif_key: str | None = None  # the flow the shown what-if was made under
        self.whatif_reminders: tuple[float, float] | None = None  # before, after (what tests read)
        self.whatif_done: str | None = None  # the flow whose whole-corpus what-if is shown

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="corpus-main"):
            with Vertical(id="corpus-side"):
                yield ListView(id="corpus-questions")
                yield Static(id="corpus-about", markup=False)
            with VerticalScroll(id="corpus-state"):
                yield ResponseHistogram(id="corpus-histogram")
                yield Static(id="corpus-stages", markup=False)
                yield Static(id="corpus-whatif", markup=False)
        yield ProgressBar(id="corpus-progress", show_eta=False)
        yield FittingFooter()

    def on_mount(self) -> None:
        for wid, title in (("#corpus-questions", "questions"), ("#corpus-about", "corpus"),
                           ("#corpus-stages", "ladder stages"), ("#corpus-whatif", "what the running flow would change")):
            self.query_one(wid).border_title = title
        self.action_reload()

    def on_screen_resume(self) -> None:
        if self.timing is not None and self.whatif_key != self._flow_key():
            # an edit was applied since: its waits on the histogram, and the what-if again
            index = self.query_one("#corpus-questions", ListView).index
            if index is not None and index < len(self.questions):
                self.show_question(index)
            self.run_whatif()

    # -- reading ------------------------------------------------------------------------

    def action_reload(self) -> None:
        root = self.app.corpus_dir
        self.query_one("#corpus-about", Static).update(f"reading {root} ...")
        self.query_one("#corpus-progress", ProgressBar).update(total=None, progress=0)
        self.read_corpus(root)

    @work(thread=True, exclusive=True, group="corpus-read")
    def read_corpus(self, root: Path) -> None:
        from sessions.corpus import corpus_units
        from sessions.overview import corpus_overview
        from sessions.timing import summary

        worker = get_current_worker()

        total = _known_total(root)

        def progress(done: int) -> None:
            if worker.is_cancelled:
                raise Cancelled
            self.post_message(CorpusProgress("journals read", done, total))

        if not root.exists() or not any(True for _ in islice(corpus_units([root]), 1)):
            self.post_message(CorpusRead(root, {}, {}, {}, problem=f"No journals in {root}: open a folder of session "
                                                                   "folders or archives with `lull rehearse --corpus PATH`."))
            return
        try:
            overview = corpus_overview([root], workers=1, progress=progress)
            part, covered = overview.timing, overview.coverage
        except Cancelled:
            return
        except (OSError, ValueError) as exc:
            self.post_message(CorpusRead(root, {}, {}, {}, problem=f"cannot read {root}: {exc}"))
            return
        spoke = {q: [t / 1000 for t, n in sorted(samples.spoke.items()) for _ in range(n)] for q, samples in part.questions.items()}
        self.post_message(CorpusRead(root, summary(part), spoke, covered.to_dict()))

    def _flow_key(self) -> str:
        from sessions.journal import document_hash

        return document_hash(self._flow_document())

    def _flow_document(self) -> dict:
        return self.app.session.runtime.flow.spec.model_dump(mode="json", by_alias=True, exclude_defaults=True)

    def run_whatif(self) -> None:
        self.whatif_key = self._flow_key()
        self.query_one("#corpus-whatif", Static).update("replaying a sample under the running flow ...")
        self.replay_corpus(self.app.corpus_dir, self._flow_document(), self.whatif_key)

    @work(thread=True, exclusive=True, group="corpus-whatif")
    def replay_corpus(self, root: Path, document: dict, key: str) -> None:
        from sessions.corpus import corpus_units
        from sessions.whatif import Edit, corpus_whatif, summary

        worker = get_current_worker()
        edit = Edit(flow_document=document)

        total: int | None = None

        def progress(done: int) -> None:
            if worker.is_cancelled:
                raise Cancelled
            self.post_message(CorpusProgress("sessions replayed", done, total))

        try:
            units = list(islice(corpus_units([root]), SAMPLE))
            total = _known_total(root, units)
            self.post_message(WhatIfRead(summary(corpus_whatif(units, edit, workers=1, progress=progress)), True, key))
            total = _known_total(root)
            self.post_message(WhatIfRead(summary(corpus_whatif([root], edit, workers=1, progress=progress)), False, key))
        except Cancelled:
            return

    # -- showing --------------------------------------------------------------------------

    def on_corpus_progress(self, message: CorpusProgress) -> None:
        bar = self.query_one("#corpus-progress", ProgressBar)
        bar.update(total=message.total, progress=message.done)
        of = f" of {message.total}" if message.total else ""
        self.sub_title = f"{message.what}: {message.done}{of}"

    def on_corpus_read(self, message: CorpusRead) -> None:
        about = self.query_one("#corpus-about", Static)
        view = self.query_one("#corpus-questions", ListView)
        view.clear()
        self.sub_title = ""
        self.query_one("#corpus-progress", ProgressBar).update(total=1, progress=1)
        if message.problem:
            self.timing = None
            about.update(message.problem)
            return
        self.timing, self.spoke_s = message.timing, message.spoke_s
        self.questions = message.timing["questions"]
        for q in self.questions:
            view.append(ListItem(Label(f"{q['question']}  {q['n']} spoke", markup=False)))
        text = Text()
        text.append(f"{message.root}\n", style="bold")
        text.append(f"{message.timing['sessions']} sessions of {', '.join(message.timing['flows'])}\n")
        if message.timing["unreadable"] or message.timing["read_in_part"]:
            text.append(f"{len(message.timing['unreadable'])} not read, {len(message.timing['read_in_part'])} read in part "
                        "(lull sessions timing names them and why)\n", style="yellow")
        if message.timing["other_flow"]:
            text.append(f"{len(message.timing['other_flow'])} of another flow\n", style="yellow")
        for name, flow in message.coverage.get("flows", {}).items():
            never = [f"{kind.replace('_', ' ')}: {', '.join(names)}" for kind, names in flow["never"].items() if names]
            text.append(f"\ncoverage of {name}: ", style="bold")
            text.append(("never reached: " + "; ".join(never)) if never else "every stage, ladder stage, route and intent reached")
        about.update(text)
        if self.questions:
            view.index = 0
            self.show_question(0)
        self.run_whatif()

    def on_list_view_highlighted(self, event: ListView.Highlighted) -> None:
        index = self.query_one("#corpus-questions", ListView).index
        if index is not None and index < len(self.questions):
            self.show_question(index)

    def show_question(self, index: int) -> None:
        q = self.questions[index]
        waits = []
        recorded = _first_wait(q)
        if recorded is not None:
            waits.append((f"{q['stages'][0]['stage']} {recorded:g}s", recorded))
        edited = self._edited_first_wait(q["question"])
        if edited is not None and edited != recorded:
            waits.append((f"edited {edited:g}s", edited))
        self.query_one(ResponseHistogram).show(f"{q['question']}: {q['n']} spoke, {q['censored']} cut off first",
                                               self.spoke_s.get(q["question"], []), waits)
        lines = Text()

        def s(ms):
            return "-" if ms is None else f"{ms / 1000:.1f}s"
        # narrow enough for an 80-column terminal: the stage name cut at 14
        lines.append(f"{'stage':<15}{'wait':>6}{'N':>6}{'p50':>6}{'p90':>6}{'p99':>6}{'past':>6}\n", style="bold")
        lines.append(f"{'the question':<15}{'':>6}{q['n']:>6}{s(q['p50_ms']):>6}{s(q['p90_ms']):>6}{s(q['p99_ms']):>6}\n")
        for st in q["stages"]:
            past = st.get("share_past_wait")
            lines.append(f"{st['stage'][:14]:<15}{s(st['wait_ms']):>6}{st.get('n', '-'):>6}{s(st.get('p50_ms')):>6}"
                         f"{s(st.get('p90_ms')):>6}{s(st.get('p99_ms')):>6}{'-' if past is None else f'{past:.0%}':>6}\n")
        lines.append(f"reminders {q['reminders']} (too early {q['reminders_too_early']}); closes {q['closes']} "
                     f"(of callers who had spoken {q['closed_after_speaking']})")
        sug = q.get("suggestion") or {}
        if sug.get("wait_ms") is not None:
            lines.append(f"\nsuggested {sug['stage']} wait: {sug['wait_ms'] / 1000:.1f}s (now {sug['current_wait_ms'] / 1000:.1f}s)")
        self.query_one("#corpus-stages", Static).update(lines)

    def _edited_first_wait(self, question: str) -> float | None:
        flow = self.app.session.runtime.flow
        try:
            stage = flow.stage(question)
            return flow.policy_for(question, stage.timing).stages[0].wait_ms / 1000
        except (KeyError, IndexError, AttributeError):
            return None

    def on_what_if_read(self, message: WhatIfRead) -> None:
        if message.flow_key != self.whatif_key:
            return  # made under a flow since edited again
        data = message.summary
        text = Text()
        n = data["sessions"]
        text.append(f"{'a sample of ' if message.sample else 'the whole corpus, '}{n} sessions: "
                    f"as recorded -> the flow running now\n", style="bold")

        def rate(name: str, row: dict) -> None:
            ci = row["change_ci"]
            text.append(f"{name}: {row['before']:.2f} -> {row['after']:.2f} a session "
                        f"(change {row['change']:+.2f}" + (f", 95 % {ci[0]:+.2f} to {ci[1]:+.2f})\n" if ci else ")\n"))

        def share(name: str, row: dict) -> None:
            ci = row["change_ci"]
            text.append(f"{name}: {row['before']}/{row['n']} -> {row['after']}/{row['n']} "
                        f"(change {row['change'] * 100:+.1f} pt" + (f", 95 % {ci[0] * 100:+.1f} to {ci[1] * 100:+.1f})\n" if ci else ")\n"))
        if n:
            reminders = data["reminders_per_session"]
            self.whatif_reminders = (reminders["before"], reminders["after"])
            rate("reminders", reminders)
            share("closed by the ladder", data["sessions_closed"])
            rate("interruptions", data["interruptions_per_session"])
            before, after = data["time_to_answer"]["before"], data["time_to_answer"]["after"]
            if before["median_ms"] is not None and after["median_ms"] is not None:
                text.append(f"time to answer (median): {before['median_ms'] / 1000:.2f}s -> {after['median_ms'] / 1000:.2f}s\n")
        if data["not_replayed"] or data["other_flow"] or data["partly_replayed"]:
            text.append(f"{len(data['not_replayed'])} not replayed, {len(data['partly_replayed'])} damaged, "
                        f"{len(data['other_flow'])} of another flow: not counted\n", style="yellow")
        if not message.sample:
            self.whatif_done = message.flow_key
            self.sub_title = ""
            self.query_one("#corpus-progress", ProgressBar).update(total=1, progress=1)
        self.query_one("#corpus-whatif", Static).update(text)


def _known_total(root: Path, units: list[Path] | None = None) -> int | None:
    """How many journals `units` (default: every unit under `root`) hold, when that is
    known without reading them: one a session folder; None if any is an archive."""
    from sessions.archive import is_archive
    from sessions.corpus import corpus_units

    try:
        units = list(corpus_units([root])) if units is None else units
    except (OSError, ValueError):
        return None
    return None if any(is_archive(u) for u in units) else len(units)
