"""The incidents screen: run an incident on a virtual clock, step by step or at speed (C4)."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Header, Label, ListItem, ListView, Static

from sessions.incidents import (
    Incident,
    IncidentError,
    VirtualRun,
    judge,
    library_paths,
    load_incident,
)

from ..describe import describe, seconds
from ..widgets import LadderPanel, PromptLane, TimerLane, WrappingLog
from ..widgets.footer import FittingFooter


class IncidentsScreen(Screen):
    BINDINGS = [
        Binding("question_mark", "app.help", "Help", id="help", key_display="?"),
        Binding("f1", "app.switch_mode('rehearse')", "Rehearse", id="rehearse"),
        Binding("f2", "app.switch_mode('editor')", "Prompts", id="editor"),
        Binding("space", "step", "Step", id="step"),
        Binding("f4", "run_all", "Run to the end", id="run_all"),
        Binding("backspace", "restart", "Restart", id="restart"),
        Binding("f9", "save_live", "Save live call", id="save_live"),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.incidents: list[Incident] = []
        self.problems: list[str] = []
        self.run: VirtualRun | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="incident-main"):
            with Vertical(id="incident-side"):
                yield ListView(id="incident-list")
                yield Static(id="incident-about", classes="panel", markup=False)
            with VerticalScroll(id="incident-state"):
                yield Static(id="incident-verdict", classes="panel", markup=False)
                yield LadderPanel(id="inc-ladder", classes="panel")
                yield TimerLane(id="inc-timers", classes="panel")
                yield PromptLane(id="inc-prompts", classes="panel")
                yield WrappingLog(id="incident-log")
        yield FittingFooter()

    def on_mount(self) -> None:
        for wid, title in (
            ("#incident-list", "incidents"), ("#incident-about", "about"),
            ("#incident-verdict", "verdict"), ("#inc-ladder", "silence ladder"), ("#inc-timers", "timer lane"),
            ("#inc-prompts", "prompt lane"), ("#incident-log", "steps"),
        ):
            self.query_one(wid).border_title = title
        self.load()

    def load(self) -> None:
        paths = library_paths() + sorted(self.app.incident_dir.glob("*.json")) if self.app.incident_dir.is_dir() else library_paths()
        self.incidents, self.problems = [], []
        for path in paths:
            try:
                self.incidents.append(load_incident(path))
            except IncidentError as exc:
                self.problems.append(str(exc))
        view = self.query_one("#incident-list", ListView)
        view.clear()
        for incident in self.incidents:
            view.append(ListItem(Label(incident.name, markup=False)))
        for problem in self.problems:
            self.notify(problem, severity="error", timeout=10)
        if self.incidents:
            self.choose(self.incidents[0])

    def choose(self, incident: Incident) -> None:
        self.run = VirtualRun(incident)
        self.query_one("#incident-log", WrappingLog).replace([])
        about = Text()
        about.append(f"{incident.title}\n", style="bold")
        if incident.source:
            about.append(f"{incident.source}\n", style="dim")
        about.append("schedule\n", style="underline")
        for step in incident.schedule:
            what = step.event["kind"] if step.event else f"deliver {step.deliver_timer['timer']} ({step.deliver_timer['generation']})"
            about.append(f"  {seconds(step.at):>7} {what}{'  ' + step.note if step.note else ''}\n")
        expect = incident.expect
        about.append("expected\n", style="underline")
        for name in ("state", "stage", "outcome"):
            if name in expect.model_fields_set:
                about.append(f"  {name}: {getattr(expect, name)}\n")
        if expect.prompts is not None:
            about.append(f"  prompts: {', '.join(expect.prompts)}\n")
        about.append("prohibited\n", style="underline")
        for rule in incident.prohibit:
            about.append(f"  ✗ {rule.what}\n", style="red")
        self.query_one("#incident-about", Static).update(about)
        self.show()

    def on_list_view_selected(self, event: ListView.Selected) -> None:
        index = self.query_one("#incident-list", ListView).index
        if index is not None:
            self.choose(self.incidents[index])

    # -- stepping ------------------------------------------------------------------------

    def action_step(self) -> None:
        if self.run is None or self.run.done():
            return
        for record in self.run.step():
            self._log(record)
        self.show()

    def action_run_all(self) -> None:
        if self.run is None:
            return
        while not self.run.done():
            for record in self.run.step():
                self._log(record)
        self.show()

    def action_restart(self) -> None:
        if self.run is not None:
            self.choose(self.run.incident)

    def _log(self, record: dict) -> None:
        self.query_one(TimerLane).note(record)
        text = describe(record)
        if text is not None:
            self.query_one("#incident-log", WrappingLog).add_text(f"[{seconds(self.run.now):>7}] {text}")

    def show(self) -> None:
        run = self.run
        if run is None:
            return
        snapshot = run.controller.snapshot()
        self.query_one(LadderPanel).show(snapshot, run.controller.shown_policy, run.now, run.controller.stage_words())
        done = run.done()
        self.query_one(TimerLane).show(snapshot, run.now, ended=done)
        self.query_one(PromptLane).show(snapshot, ended=done)
        verdict = Text()
        if done:
            outcome = judge(run)
            verdict.append(f" {outcome.verdict} ", style="black on green" if outcome.passed else "white on red")
            for failure in outcome.failures:
                verdict.append(f"\n{failure}", style="red")
        else:
            verdict.append(f"at {seconds(run.now)}: space steps to the next event or deadline, f4 runs to the end")
        self.query_one("#incident-verdict", Static).update(verdict)

    def action_save_live(self) -> None:
        path = self.app.save_live_as_incident()
        if path is not None:
            self.notify(f"saved the live call as {path}")
            self.load()


def incident_dir_default() -> Path:
    return Path.cwd() / "incidents"
