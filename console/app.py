"""The Textual console: thin. It owns the live session and routes its records to screens."""

from __future__ import annotations

from pathlib import Path

from textual.app import App
from textual.binding import Binding

from ladder.flow.compile import CompiledFlow

from .commands import IncidentCommands
from .live import LiveSession
from .messages import AgentLine, SessionRecord
from .screens.editor import EditorScreen
from .screens.incidents import IncidentsScreen
from .screens.rehearse import RehearseScreen
from .screens.sessions import SessionsScreen
from .text_backend import TextBackend


class LullApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "Lull"
    MODES = {
        "rehearse": RehearseScreen,
        "editor": EditorScreen,
        "incidents": IncidentsScreen,
        "sessions": SessionsScreen,
    }
    DEFAULT_MODE = "rehearse"
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", id="quit"),
        Binding("f12", "switch_mode('sessions')", "Sessions", id="sessions"),
    ]
    COMMANDS = App.COMMANDS | {IncidentCommands}

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
        voice=None,
        notice: str = "",
        verbose: bool = False,
        clock=None,
        autostart: bool = True,
    ) -> None:
        super().__init__()
        self.flow_path = flow_path
        self.flow_document = flow_document if flow_document is not None else _document(flow, flow_path)
        self.incident_dir = incident_dir or Path.cwd() / "incidents"
        self.recordings_dir = recordings_dir or Path.cwd() / "recordings"
        self.voice = voice  # a PiperVoice for spoken previews, loaded on first use
        self.notice = notice
        self.verbose = verbose
        self.backend = backend or TextBackend()
        if hasattr(self.backend, "on_line"):
            self.backend.on_line = self._line  # agent and caller lines go to the transcript
        kwargs = {"clock": clock} if clock is not None else {}
        self.session = LiveSession(flow, self.backend, journal_dir=journal_dir, **kwargs)
        self.session.listeners.append(self._record)
        self.autostart = autostart

    # -- the session -----------------------------------------------------------------

    async def on_mount(self) -> None:
        if self.autostart:
            await self.session.start()

    async def on_unmount(self) -> None:
        if not self.session.closed.is_set():
            await self.session.stop()  # closes streams and the journal

    def say(self, text: str) -> None:
        self.backend.say(text)

    def _line(self, who: str, text: str) -> None:
        self._broadcast(AgentLine(who, text))

    def _record(self, now: float, kind: str, record: dict) -> None:
        if kind == "decision":
            self._broadcast(SessionRecord(now, kind, record))

    def _broadcast(self, message) -> None:
        screen = self.screen
        if isinstance(screen, RehearseScreen):
            screen.post_message(message)

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
        return describe() if describe else "text backend: no microphone or speaker (type the caller's turns)"


def _document(flow: CompiledFlow, path: Path | None) -> dict:
    import json

    if path is not None:
        return json.loads(path.read_text(encoding="utf-8"))
    return flow.spec.model_dump(mode="json", by_alias=True, exclude_defaults=True)
