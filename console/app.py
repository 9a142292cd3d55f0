"""The Textual console: thin. It owns the live session, keeps the call's history for the
screens (so nothing is lost while another screen shows) and restarts the call."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from pathlib import Path

from textual.app import App
from textual.binding import Binding

from ladder.flow.compile import CompiledFlow
from sessions.live import LiveSession
from sessions.live_incidents import LiveIncidents
from voices.backends.text import TextBackend

from .commands import LullCommands
from .messages import CallRestarted, HistoryChanged
from .screens.corpus import CorpusScreen
from .screens.editor import EditorScreen
from .screens.help import HelpScreen
from .screens.incidents import IncidentsScreen
from .screens.rehearse import RehearseScreen
from .screens.sessions import SessionsScreen

HISTORY = 20_000  # records and transcript lines kept for the screens


class CallHistory:
    """Everything the live call said and decided, in order, for whichever screen shows it.

    Counters are absolute, so a screen that was away catches up from where it stopped
    even after the oldest entries fell off the end.
    """

    def __init__(self, size: int = HISTORY) -> None:
        self.lines: deque[tuple[str, str]] = deque(maxlen=size)  # (who, text)
        self.records: deque[tuple[float, dict]] = deque(maxlen=size)  # (now, flat decision)
        self.lines_total = 0
        self.records_total = 0
        self.calls = 1  # how many calls the console has run (restarts + 1)

    def add_line(self, who: str, text: str) -> None:
        self.lines.append((who, text))
        self.lines_total += 1

    def add_record(self, now: float, record: dict) -> None:
        self.records.append((now, record))
        self.records_total += 1

    def lines_since(self, seen: int) -> list[tuple[str, str]]:
        new = min(self.lines_total - seen, len(self.lines))
        return list(self.lines)[len(self.lines) - new :] if new > 0 else []

    def records_since(self, seen: int) -> list[tuple[float, dict]]:
        new = min(self.records_total - seen, len(self.records))
        return list(self.records)[len(self.records) - new :] if new > 0 else []


class LullApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "Lull"
    MODES = {
        "rehearse": RehearseScreen,
        "editor": EditorScreen,
        "incidents": IncidentsScreen,
        "sessions": SessionsScreen,
        "corpus": CorpusScreen,
    }
    DEFAULT_MODE = "rehearse"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (34, "-tall")]
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", id="quit", priority=True),
        Binding("f11", "switch_mode('corpus')", "Corpus", id="corpus"),
        Binding("f12", "switch_mode('sessions')", "Sessions", id="sessions"),
        Binding("ctrl+r", "restart_call", "Restart call", id="restart_call", priority=True),
        Binding("question_mark", "help", "Help", id="help", show=False),
    ]
    COMMANDS = App.COMMANDS | {LullCommands}

    def __init__(
        self,
        flow: CompiledFlow,
        *,
        flow_path: Path | None = None,
        backend=None,
        journal_dir: Path | None = None,
        flow_document: dict | None = None,
        incident_dir: Path | None = None,
        recordings_dir: Path | None = None,
        corpus_dir: Path | None = None,
        voice=None,
        notice: str = "",
        verbose: bool = False,
        clock=None,
        autostart: bool = True,
        backend_factory: Callable[[], object] | None = None,
    ) -> None:
        super().__init__()
        self.flow_path = flow_path
        self.flow_document = flow_document if flow_document is not None else _document(flow, flow_path)
        self.incident_dir = incident_dir or Path.cwd() / "incidents"
        self.recordings_dir = recordings_dir or Path.cwd() / "recordings"
        # the corpus screen's journals: a folder of session folders or archives, or one archive
        self.corpus_dir = corpus_dir or self.recordings_dir
        self.voice = voice  # a PiperVoice for spoken previews, loaded on first use
        self.notice = console_notice(notice)
        self.verbose = verbose
        self.history = CallHistory()
        self.rehearse_screen: RehearseScreen | None = None
        self._history_posted = False
        self._clock = clock
        self._journal_dir = journal_dir
        self.backend_factory = backend_factory
        self.backend = backend or TextBackend()
        self.autostart = autostart
        self._open(flow, self.backend, journal_dir)

    # -- the session -----------------------------------------------------------------

    def _open(self, flow: CompiledFlow, backend, journal_dir: Path | None) -> None:
        self.backend = backend
        if hasattr(backend, "on_line"):
            backend.on_line = self._line  # agent and caller lines go to the transcript
        kwargs = {"clock": self._clock} if self._clock is not None else {}
        self.session = LiveSession(flow, backend, journal_dir=journal_dir, **kwargs)
        self.session.listeners.append(self._record)
        self.incidents = LiveIncidents(self.session)

    async def on_mount(self) -> None:
        if self._on_a_terminal():
            self.set_interval(1.0, self._check_terminal_size)
        if self.autostart:
            await self.session.start()

    def _on_a_terminal(self) -> bool:
        try:
            from textual.drivers.linux_driver import LinuxDriver
        except ImportError:  # no termios (not a POSIX system): Textual's own resize handling only
            return False
        return isinstance(self._driver, LinuxDriver)

    def _check_terminal_size(self) -> None:
        """Lay out again if the terminal's size is not the one last laid out for. A resize
        can be missed: started in a tmux pane on a busy machine, the console stayed laid
        out for 80x24 in a 160x48 pane (the pane grew as lull started, and no resize came)."""
        import os
        import sys

        from textual import events
        from textual.geometry import Size

        try:
            columns, lines = os.get_terminal_size(sys.__stdout__.fileno())
        except (OSError, ValueError, AttributeError):
            return
        if (columns, lines) != (self.size.width, self.size.height):
            size = Size(columns, lines)
            self.post_message(events.Resize(size, size))

    async def on_unmount(self) -> None:
        if not self.session.closed.is_set():
            await self.session.stop()  # closes streams and the journal

    def say(self, text: str) -> None:
        if self.session.closed.is_set():
            self.notify("the call has ended: ctrl+r starts it again (applied edits kept)", severity="warning")
            return
        self.backend.say(text)
        typed = getattr(self.backend, "typed", None)
        if typed is not None and typed.waiting:
            self.notify("your turn waits for the intent matcher, still building (once per flow: it is kept on disk)")

    def _line(self, who: str, text: str) -> None:
        self.history.add_line(who, text)
        self._changed()

    def _record(self, now: float, kind: str, record: dict) -> None:
        # inputs too: the timeline and the "why" of a move show what led to it
        self.history.add_record(now, record)
        self._changed()

    def _changed(self) -> None:
        """Tell the rehearse screen once per batch; it reads the history itself, so what
        happens while another screen shows is there when it comes back."""
        screen = self.rehearse_screen
        if screen is not None and not self._history_posted:
            self._history_posted = True
            screen.post_message(HistoryChanged())

    def history_read(self) -> None:
        self._history_posted = False

    # -- restart ------------------------------------------------------------------------

    def _fresh_backend(self):
        if self.backend_factory is not None:
            return self.backend_factory()
        fresh = getattr(self.backend, "fresh", None)
        if fresh is not None:
            return fresh()
        if isinstance(self.backend, TextBackend):
            return TextBackend(ms_per_word=self.backend.ms_per_word, start_delay_ms=self.backend.start_delay_ms)
        return None

    def _next_journal(self) -> Path | None:
        base = self._journal_dir
        if base is None:
            return None
        return base.with_name(f"{base.name}-call{self.history.calls + 1}")

    async def action_restart_call(self) -> None:
        await self.restart_call()

    async def restart_call(self) -> bool:
        """A new call on the flow as it runs now (applied edits kept), same console."""
        backend = self._fresh_backend()
        if backend is None:
            self.notify(f"the {getattr(self.backend, 'name', 'current')} backend cannot start a second call", severity="error")
            return False
        flow = self.session.runtime.flow  # with every applied edit
        if not self.session.closed.is_set():
            await self.session.stop()
        journal = self._next_journal()
        self.history.calls += 1
        self._open(flow, backend, journal)
        self.history.add_line("", f"— call {self.history.calls}: restarted with the applied edits —")
        if self.rehearse_screen is not None:
            self.rehearse_screen.post_message(CallRestarted())
        self._changed()
        await self.session.start()
        where = f"; recording in {journal}" if journal else ""
        self.notify(f"call {self.history.calls} started with the applied edits{where}")
        return True

    # -- actions every screen shares --------------------------------------------------

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    def inject(self, command: str) -> None:
        """An incident into the live call, with a message in the console's own words."""
        if self.session.closed.is_set():
            self.notify("the call has ended: ctrl+r starts it again", severity="warning")
            return
        if command == "dup" and self.incidents.last_fired is None:
            self.notify("no timer has fired yet: F6 delivers the last fired timer again", severity="warning")
            return
        self.in_order(command, lambda: self._run_incident(command))

    def in_order(self, what: str, action: Callable[[], None]) -> None:
        """Run what the designer did after the caller turns typed before it: a turn that
        waits for a matcher still building is fed first (TypedTurns.after)."""
        session = self.session

        def run() -> None:
            if session is self.session and not session.closed.is_set():
                action()  # else the call ended (or restarted) while it waited

        after = getattr(self.backend, "after_typed_turns", None)
        if after is None:
            run()
        elif after(run):
            self.notify(f"{what}: runs after the turn you typed, which waits for the intent matcher")

    def _run_incident(self, command: str) -> None:
        error = self.incidents.run(command)
        if error:
            self.notify(error.lstrip("/"), severity="warning")

    def set_tool_mode(self, mode: str) -> str | None:
        tools = list(self.session.flow.tools)
        if not tools:
            self.notify("this flow declares no tools", severity="warning")
            return None
        self.in_order(f"tool {mode}", lambda: self.incidents.run(f"tool {tools[0]} {mode}"))
        return tools[0]

    def preview_prompt(self, text: str) -> tuple[float, str]:
        """Synthesize `text` (in a worker thread); returns its duration and how it was got."""
        if self.voice is None:
            from voices.tts import PiperVoice

            self.voice = PiperVoice()
        audio = self.voice.synthesize_all(text)
        play = getattr(self.backend, "play_preview", None)
        if play is not None:
            play(audio, self.voice.sample_rate)
            return len(audio) / self.voice.sample_rate * 1000.0, "spoken and measured"
        return len(audio) / self.voice.sample_rate * 1000.0, "synthesized and measured, not played (no speaker)"

    def save_live_as_incident(self) -> Path | None:
        import json
        import time

        from sessions.incidents import incident_from_inputs

        runtime = self.session.runtime
        if not runtime.ladder_inputs:
            self.notify("the live call has no inputs yet", severity="warning")
            return None
        stamp = time.strftime("%Y%m%d_%H%M%S")
        name = f"live_{stamp}"
        document = incident_from_inputs(
            name,
            f"Live rehearsal of {runtime.flow.spec.name} at {stamp}",
            runtime.ladder_inputs,
            runtime.ladder.policy.model_dump(mode="json"),
            source="saved from the console",
        )
        self.incident_dir.mkdir(parents=True, exist_ok=True)
        path = self.incident_dir / f"{name}.json"
        if path.exists():
            self.notify(f"{path} already exists; not overwritten", severity="error")
            return None
        path.write_text(json.dumps(runtime.redact(document), indent=2) + "\n", encoding="utf-8")
        return path

    def media_line(self) -> str:
        describe = getattr(self.backend, "media_line", None)
        line = describe() if describe else "text backend: no microphone or speaker (type the caller's turns)"
        fallback = getattr(self.backend, "matcher_fallback", None)
        if fallback:  # understood less well than the designer expects: say so where they look
            line += f" · intents by {fallback['using']} ({fallback['asked']} could not load)"
        return line


def console_notice(notice: str) -> str:
    """The start-up notice as the console says it: the console is already on the text
    backend, so a hint to start it with `--backend text` is dropped."""
    import re

    if not notice:
        return notice
    cleaned = re.sub(r";?\s*run `lull rehearse --backend text`[^;.]*", "", notice).rstrip(" ;")
    if cleaned != notice:
        cleaned += ". The console opened on the text backend: type the caller's turns below."
    return cleaned


def _document(flow: CompiledFlow, path: Path | None) -> dict:
    import json

    if path is not None:
        return json.loads(path.read_text(encoding="utf-8"))
    return flow.spec.model_dump(mode="json", by_alias=True, exclude_defaults=True)
