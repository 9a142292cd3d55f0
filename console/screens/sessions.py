"""The sessions screen: open a recording, step through it, replay it under the edited flow (C5)."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, Label, ListItem, ListView, RichLog, Static

from sessions.journal import JournalError, read_journal
from sessions.replay import ReplayError
from sessions.step import Cursor

from ..describe import describe, seconds
from ..widgets import LadderPanel, PromptLane, TimerLane


class SessionsScreen(Screen):
    BINDINGS = [
        Binding("f1", "app.switch_mode('rehearse')", "Rehearse", id="rehearse"),
        Binding("f2", "app.switch_mode('editor')", "Prompts", id="editor"),
        Binding("f3", "app.switch_mode('incidents')", "Incidents", id="incidents"),
        Binding("right", "step(1)", "Step", id="step_forward"),
        Binding("left", "step(-1)", "Back", id="step_back"),
        Binding("pagedown", "step(10)", "+10", id="jump_forward"),
        Binding("pageup", "step(-10)", "-10", id="jump_back"),
        Binding("f5", "play", "Play audio", id="play_audio"),
        Binding("f6", "paired", "Replay under edited flow", id="paired"),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.folders: list[Path] = []
        self.cursor: Cursor | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal():
            with Vertical(id="session-side"):
                yield ListView(id="session-list")
                yield Static(id="session-about", classes="panel")
            with Vertical(id="session-state"):
                yield Static(id="session-timeline", classes="panel")
                yield LadderPanel(id="ses-ladder", classes="panel")
                yield TimerLane(id="ses-timers", classes="panel")
                yield PromptLane(id="ses-prompts", classes="panel")
                yield RichLog(id="session-log", wrap=True)
        yield Footer()

    def on_mount(self) -> None:
        for wid, title in (
            ("#session-list", f"recordings in {self.app.recordings_dir}"), ("#session-about", "session"),
            ("#session-timeline", "timeline"), ("#ses-ladder", "silence ladder at the cursor"),
            ("#ses-timers", "timer lane"), ("#ses-prompts", "prompt lane"), ("#session-log", "at the cursor"),
        ):
            self.query_one(wid).border_title = title
        self.load()

    def load(self) -> None:
        root = self.app.recordings_dir
        self.folders = sorted(p.parent for p in root.glob("*/journal.jsonl")) if root.is_dir() else []
        view = self.query_one("#session-list", ListView)
        view.clear()
        for folder in self.folders:
            view.append(ListItem(Label(self._label(folder))))
        if not self.folders:
            self.query_one("#session-about", Static).update(
                f"No recordings in {root} yet. Record one with `lull rehearse --journal {root}/take1`."
            )

    def _label(self, folder: Path) -> str:
        try:
            journal = read_journal(folder)
        except JournalError:
            return f"{folder.name}  (unreadable)"
        closed = [r for r in journal.decisions() if r.get("effect") == "SessionClosed"]
        length = journal.records[-1]["t_ms"] / 1000 if journal.records else 0
        return f"{folder.name}  {closed[-1]['outcome'] if closed else 'open'}  {length:.0f}s"

    def on_list_view_selected(self, event: ListView.Selected) -> None:
        index = self.query_one("#session-list", ListView).index
        if index is not None:
            self.open(self.folders[index])

    def open(self, folder: Path) -> None:
        try:
            self.cursor = Cursor(folder)
        except (JournalError, ReplayError, OSError, ValueError) as exc:
            self.notify(f"cannot open {folder.name}: {exc}", severity="error")
            return
        journal = self.cursor.journal
        about = Text()
        about.append(f"{folder.name}\n", style="bold")
        for key in ("source", "flow", "incident", "created"):
            if key in journal.header:
                about.append(f"{key}: {journal.header[key]}\n")
        about.append(journal.report(), style="dim")
        self.query_one("#session-about", Static).update(about)
        self.show(self.cursor.seek(0))

    def action_step(self, steps: int) -> None:
        if self.cursor is not None:
            self.show(self.cursor.seek(self.cursor.index + steps))

    def show(self, position) -> None:
        cursor = self.cursor
        assert cursor is not None
        total = len(cursor)
        width = 50
        filled = round(position.index / total * width) if total else 0
        end = cursor.inputs[-1]["t_ms"] if cursor.inputs else 0
        self.query_one("#session-timeline", Static).update(
            f"{'━' * filled}●{'─' * (width - filled)}  input {position.index}/{total}  "
            f"{seconds(position.t_ms)} of {seconds(end)}"
        )
        state = position.state
        ladder_state = state.get("ladder", state)  # a flow session nests the ladder's state
        core = getattr(cursor.core, "ladder", cursor.core)
        self.query_one(LadderPanel).show(ladder_state, core.policy, position.t_ms)
        timers = self.query_one(TimerLane)
        timers.rejected = [d for d in position.decisions if d.get("kind") in ("stale_rejected", "rejected")]
        timers.show(ladder_state, position.t_ms)
        self.query_one(PromptLane).show(ladder_state)
        log = self.query_one("#session-log", RichLog)
        log.clear()
        if position.event is not None:
            log.write(f"input: {position.event}")
        for decision in position.decisions:
            text = describe({"effect": "Trace", **decision, **(decision.get("detail") or {})} if "effect" not in decision else decision)
            if text:
                log.write(f"  {text}")

    def action_play(self) -> None:
        cursor = self.cursor
        if cursor is None:
            return
        audio = cursor.audio_around(cursor.position().t_ms, span_ms=2000)
        play = getattr(self.app.backend, "play_preview", None)
        if not audio:
            self.notify("this session has no mic.wav or out.wav", severity="warning")
        elif play is None:
            self.notify("no speaker on this backend: open the console with --backend audio to listen", severity="warning")
        else:
            samples, rate, _ = audio.get("mic.wav") or audio["out.wav"]
            play(samples, rate)

    def action_paired(self) -> None:
        from sessions.paired import paired_replay

        cursor = self.cursor
        if cursor is None:
            return
        try:
            report = paired_replay(cursor.path, flow=self.app.session.runtime.flow)
        except Exception as exc:  # a recording of another flow may not fit: say so
            self.notify(f"paired replay failed: {exc}", severity="error")
            return
        log = self.query_one("#session-log", RichLog)
        log.clear()
        log.write(report.caveat)
        for diff in report.episodes:
            log.write(f"episode {diff.episode}: {'CHANGED' if diff.changed else 'same'}")
            log.write(f"  recorded: {diff.before.line() if diff.before else '-'}")
            log.write(f"  edited:   {diff.after.line() if diff.after else '-'}")
        log.write(f"session outcome: recorded {report.session_outcome[0]}, edited {report.session_outcome[1]}")
