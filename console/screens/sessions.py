"""The sessions screen: open a recording, step through it, replay it under the edited flow (C5)."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Header, Label, ListItem, ListView, Static

from sessions.journal import JournalError, read_journal
from sessions.replay import ReplayError
from sessions.step import Cursor

from ..describe import describe, describe_input, masked_span, seconds
from ..widgets import LadderPanel, PromptLane, Timeline, TimerLane, WrappingLog
from ..widgets.footer import FittingFooter


class SessionsScreen(Screen):
    BINDINGS = [
        Binding("question_mark", "app.help", "Help", id="help", key_display="?"),
        Binding("f1", "app.switch_mode('rehearse')", "Rehearse", id="rehearse"),
        Binding("f2", "app.switch_mode('editor')", "Prompts", id="editor"),
        Binding("f3", "app.switch_mode('incidents')", "Incidents", id="incidents"),
        Binding("right", "step(1)", "Step", id="step_forward"),
        Binding("left", "step(-1)", "Back", id="step_back"),
        Binding("pagedown", "step(10)", "+10", id="jump_forward"),
        Binding("pageup", "step(-10)", "-10", id="jump_back"),
        Binding("f5", "play", "Play audio", id="play_audio"),
        Binding("f6", "paired", "Replay edited", id="paired"),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.folders: list[Path] = []
        self.cursor: Cursor | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="session-main"):
            with Vertical(id="session-side"):
                yield ListView(id="session-list")
                yield Static(id="session-about", classes="panel", markup=False)
            with VerticalScroll(id="session-state"):
                yield Static(id="session-timeline", classes="panel", markup=False)
                yield Timeline(id="ses-picture", classes="panel")
                yield LadderPanel(id="ses-ladder", classes="panel")
                yield TimerLane(id="ses-timers", classes="panel")
                yield PromptLane(id="ses-prompts", classes="panel")
                yield WrappingLog(id="session-log")
        yield FittingFooter()

    def on_mount(self) -> None:
        for wid, title in (
            ("#session-list", "recordings"), ("#session-about", "session"),
            ("#session-timeline", "position"), ("#ses-picture", "timeline at the cursor"),
            ("#ses-ladder", "silence ladder at the cursor"),
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
            view.append(ListItem(Label(self._label(folder), markup=False)))
        if self.folders:
            # the cursor on the first recording: Enter opens it at once (with no index,
            # the first Enter opened nothing until an arrow key had moved the cursor)
            self.call_after_refresh(self._highlight_first)
        else:
            self.query_one("#session-about", Static).update(
                f"No recordings in {root} yet. Record one with `lull rehearse --journal {root}/take1`."
            )

    def _highlight_first(self) -> None:
        view = self.query_one("#session-list", ListView)
        if view.index is None and len(view):
            view.index = 0

    def _label(self, folder: Path) -> str:
        try:
            journal = read_journal(folder)
        except JournalError:
            return f"{folder.name}  (unreadable)"
        closed = [r for r in journal.decisions() if r.get("effect") == "SessionClosed"]
        length = journal.records[-1]["t_ms"] / 1000 if journal.records else 0
        return f"{folder.name}  {closed[-1]['outcome'] if closed else 'not closed'}  {length:.0f}s"

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
        width = 30
        filled = round(position.index / total * width) if total else 0
        end = cursor.inputs[-1]["t_ms"] if cursor.inputs else 0
        self.query_one("#session-timeline", Static).update(
            f"{'━' * filled}●{'─' * (width - filled)}  input {position.index}/{total}  "
            f"{seconds(position.t_ms)} of {seconds(end)}"
        )
        state = position.state
        ladder_state = state.get("ladder", state)  # a flow session nests the ladder's state
        core = getattr(cursor.core, "ladder", cursor.core)
        self.query_one(LadderPanel).show(ladder_state, core.shown_policy, position.t_ms, core.stage_words())
        timers = self.query_one(TimerLane)
        timers.rejected = [d for d in position.decisions if d.get("kind") in ("stale_rejected", "rejected")]
        timers.show(ladder_state, position.t_ms)
        self.query_one(PromptLane).show(ladder_state)
        self.show_picture(position.t_ms)
        lines = []
        if position.event is not None:
            lines.append(f"input: {describe_input(position.event)}")
        for decision in position.decisions:
            text = describe({"effect": "Trace", **decision, **(decision.get("detail") or {})} if "effect" not in decision else decision)
            if text:
                lines.append(f"  {text}")
        for observation in self.observed_at(position.index):
            text = describe(observation)
            if text:
                lines.append(f"  observed: {text}")
        for span in cursor.masked_around(position.t_ms):
            lines.append(f"  audio masked: {masked_span(span)}")
        self.query_one("#session-log", WrappingLog).replace(lines)

    def observed_at(self, index: int) -> list[dict]:
        """The observations journaled between the input at the cursor and the next one
        (the end-of-turn decisions, the turn latencies): measured beside the core, so
        the step-through does not replay them; it shows them where the call wrote them."""
        cursor = self.cursor
        assert cursor is not None
        inputs = cursor.inputs
        after = inputs[index - 1].get("seq", -1) if index > 0 else -1
        before = inputs[index].get("seq") if index < len(inputs) else None
        return [
            r for r in cursor.journal.records
            if r.get("effect") == "Observation" and r.get("seq", -1) > after and (before is None or r.get("seq", -1) < before)
        ]

    def show_picture(self, t_ms: float) -> None:
        """The timeline of the recording up to the cursor, the cursor marked."""
        picture = self.query_one(Timeline)
        picture.reset()
        for record in self.cursor.journal.records:
            if record.get("t_ms", 0.0) > t_ms:
                break
            picture.add(record.get("t_ms", 0.0), record)
        picture.show(t_ms, cursor=t_ms)

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
            masked = cursor.masked_around(cursor.position().t_ms)
            if masked:
                self.notify("part of this audio is masked: " + "; ".join(masked_span(s) for s in masked), severity="warning")

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
        words = self._wording_changes(cursor)
        lines = [report.caveat]
        for diff in report.episodes:
            said = self._said_in_episode(cursor, diff.episode)
            changed_words = [w for w in words if w[1] in said]
            verdict = "CHANGED" if diff.changed else ("CHANGED (wording)" if changed_words else "same")
            lines.append(f"episode {diff.episode}: {verdict}")
            lines.append(f"  recorded: {diff.before.line() if diff.before else '-'}")
            lines.append(f"  edited:   {diff.after.line() if diff.after else '-'}")
            for label, old, new in changed_words:
                lines.append(f"  {label}: “{old}” → “{new}”")
        lines.append(f"session outcome: recorded {report.session_outcome[0]}, edited {report.session_outcome[1]}")
        self.query_one("#session-log", WrappingLog).replace(lines)

    def _wording_changes(self, cursor) -> list[tuple[str, str, str]]:
        from ..prompts import compile_document, wording_changes

        document = cursor.journal.header.get("flow_document")
        recorded = compile_document(document, "the recording's flow") if isinstance(document, dict) else None
        if recorded is None:
            return []
        said = [r.get("text") for r in cursor.journal.records if r.get("effect") == "RequestPrompt"]
        return wording_changes(recorded, self.app.session.runtime.flow, said)

    def _said_in_episode(self, cursor, episode: int) -> set[str]:
        said, current = set(), None
        for record in cursor.journal.records:
            if record.get("kind") == "episode_started":
                current = record.get("episode")
            elif record.get("effect") == "RequestPrompt" and current == episode:
                said.add(record.get("text"))
        return said
