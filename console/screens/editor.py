"""The prompt editor: every prompt in place, lint, a spoken preview, apply, save (C3)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Header, Label, ListItem, ListView, Static, TextArea

from ..prompts import (
    PromptItem,
    apply_to_call,
    estimate_ms,
    lint,
    prompt_items,
    save_flow_file,
)


class EditorScreen(Screen):
    BINDINGS = [
        Binding("f1", "app.switch_mode('rehearse')", "Rehearse", id="rehearse"),
        Binding("f3", "app.switch_mode('incidents')", "Incidents", id="incidents"),
        Binding("f4", "preview", "Preview", id="preview"),
        Binding("f5", "apply", "Apply to call", id="apply"),
        Binding("f6", "save", "Save file", id="save"),
    ]

    @dataclass
    class Previewed(Message):
        key: str
        duration_ms: float
        how: str

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.items: list[PromptItem] = []
        self.edits: dict[tuple, str] = {}  # JSON path -> new text, not yet saved
        self.measured: dict[str, float] = {}
        self.current: PromptItem | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal():
            yield ListView(id="prompt-list")
            with Vertical(id="prompt-edit"):
                yield Label("", id="prompt-label")
                yield TextArea(id="prompt-text", soft_wrap=True)
                yield Static(id="prompt-lint")
                yield Static(id="prompt-status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#prompt-list").border_title = "prompts"
        self.query_one("#prompt-edit").border_title = "wording"
        self.reload()

    def reload(self) -> None:
        self.items = prompt_items(self.app.session.runtime.flow)
        view = self.query_one("#prompt-list", ListView)
        view.clear()
        for item in self.items:
            view.append(ListItem(Label(item.label)))
        if self.items:
            self.select(self.items[0])

    def _capture(self) -> None:
        """Keep what the text area holds as the current prompt's edit (or drop it)."""
        if self.current is None:
            return
        text = self.query_one("#prompt-text", TextArea).text
        if text != self.current.text:
            self.edits[self.current.path] = text
        else:
            self.edits.pop(self.current.path, None)

    def select(self, item: PromptItem) -> None:
        self._capture()
        self.current = item
        self.query_one("#prompt-label", Label).update(f"{item.label}  ({'/'.join(map(str, item.path))})")
        area = self.query_one("#prompt-text", TextArea)
        area.text = self.edits.get(item.path, item.text)
        self.show_lint()

    def on_list_view_selected(self, event: ListView.Selected) -> None:
        index = self.query_one("#prompt-list", ListView).index
        if index is not None:
            self.select(self.items[index])

    def on_list_view_highlighted(self, event: ListView.Highlighted) -> None:
        index = self.query_one("#prompt-list", ListView).index
        if index is not None and 0 <= index < len(self.items):
            self.select(self.items[index])

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        self._capture()
        self.show_lint()

    def show_lint(self) -> None:
        item = self.current
        if item is None:
            return
        text = self.edits.get(item.path, item.text)
        flow = self.app.session.runtime.flow
        measured = self.measured.get(text)
        problems = lint(item, text, flow, measured)
        length = measured if measured is not None else estimate_ms(text, flow.ladder)
        how = "measured" if measured is not None else "estimated"
        lines = [f"length {length / 1000:.1f}s ({how})"]
        lines += [f"⚠ {p}" for p in problems] or ["✓ no problems found"]
        self.query_one("#prompt-lint", Static).update("\n".join(lines))
        pending = len(self.edits)
        self.query_one("#prompt-status", Static).update(
            f"{pending} unsaved edit(s)" if pending else "no unsaved edits"
        )

    # -- actions ---------------------------------------------------------------------------

    def action_preview(self) -> None:
        if self.current is not None:
            text = self.edits.get(self.current.path, self.current.text)
            self.preview(self.current.key, text)

    @work(thread=True, exclusive=True, group="preview")
    def preview(self, key: str, text: str) -> None:
        """Synthesize in a worker: the interface never waits for the voice."""
        started = time.monotonic()
        try:
            duration_ms, how = self.app.preview_prompt(text)
        except Exception as exc:  # the voice is an edge: report, do not crash the editor
            self.app.call_from_thread(self.notify, f"preview failed: {exc}", severity="error")
            return
        self.app.call_from_thread(self.measured.__setitem__, text, duration_ms)
        self.post_message(self.Previewed(key, duration_ms, f"{how}, in {time.monotonic() - started:.2f}s"))

    def on_editor_screen_previewed(self, message: Previewed) -> None:
        self.notify(f"preview: {message.duration_ms / 1000:.2f}s ({message.how})")
        self.show_lint()

    def action_apply(self) -> None:
        self._capture()
        if not self.edits:
            self.notify("nothing to apply")
            return
        try:
            apply_to_call(self.app.session, self._document(), self.edits, "edited flow")
        except ValueError as exc:
            self.notify(f"not applied: {exc}", severity="error", timeout=8)
            return
        self.notify("applied: the call uses the new wording from its next prompt")

    def action_save(self) -> None:
        path = self.app.flow_path
        if path is None:
            self.notify("this flow is shipped with Lull: run `lull rehearse my_flow.json` on a copy to save", severity="warning")
            return
        self._capture()
        if not self.edits:
            self.notify("nothing to save")
            return
        try:
            save_flow_file(path, self.edits, self.app.session.runtime.flow)
            # what is saved is the flow now: the running call uses it too
            apply_to_call(self.app.session, self._document(), self.edits, str(path))
        except (OSError, ValueError) as exc:
            self.notify(f"not saved: {exc}", severity="error", timeout=8)
            return
        self.app.flow_document = json.loads(path.read_text(encoding="utf-8"))
        self.edits.clear()
        self.current = None
        self.notify(f"saved {path}; the call uses it from its next prompt")
        self.reload()

    def _document(self) -> dict:
        return self.app.flow_document

