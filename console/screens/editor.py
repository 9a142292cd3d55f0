"""The prompt editor: every prompt and timing in place, lint, a spoken preview, apply,
save, revert (C3).

Wording, a ladder stage's wait and the hold and episode bounds follow the same rules:
F5 applies the edit to the running call (journaled, so the session replays clean), F6
saves it into the flow file (only the edited values change; an edit that does not
validate never reaches the file), F7 reverts to the file's value, then to the shipped one.
"""

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
from textual.widgets import Header, Label, ListItem, ListView, Static, TextArea

from ..prompts import (
    PromptItem,
    apply_to_call,
    edit_values,
    estimate_ms,
    lint,
    original_texts,
    prompt_items,
    save_flow_file,
)
from ..widgets.footer import FittingFooter


class WordingArea(TextArea):
    """The wording box: the screen's function keys stay the screen's (TextArea binds
    F6 and F7 to selections), and ctrl+a selects the whole prompt, so typing replaces it
    (TextArea's ctrl+a goes to the line's start; home still does)."""

    BINDINGS = [
        *(b for b in TextArea.BINDINGS if getattr(b, "key", "") not in ("f6", "f7", "home,ctrl+a")),
        Binding("home", "cursor_line_start", "Line start", show=False),
        Binding("ctrl+a", "select_all", "Select all", id="select_all", show=False),
    ]


class EditorScreen(Screen):
    AUTO_FOCUS = "#prompt-list"
    BINDINGS = [
        Binding("question_mark", "app.help", "Help", id="help", key_display="?"),
        Binding("f1", "app.switch_mode('rehearse')", "Rehearse", id="rehearse", priority=True),
        Binding("f3", "app.switch_mode('incidents')", "Incidents", id="incidents", priority=True),
        Binding("f4", "preview", "Preview", id="preview", priority=True),
        Binding("f5", "apply", "Apply", id="apply", priority=True),
        Binding("f6", "save", "Save file", id="save", priority=True),
        Binding("f7", "revert", "Revert", id="revert", priority=True),
    ]

    @dataclass
    class Previewed(Message):
        key: str
        duration_ms: float
        how: str

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.items: list[PromptItem] = []
        self.edits: dict[tuple, str] = {}  # JSON path -> new text, not yet applied or saved
        self.measured: dict[str, float] = {}
        self.current: PromptItem | None = None
        self._loading = False

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="editor-main"):
            yield ListView(id="prompt-list")
            with Vertical(id="prompt-edit"):
                yield Label("", id="prompt-label", markup=False)
                yield WordingArea(id="prompt-text", soft_wrap=True)
                yield Static(id="prompt-lint", markup=False)
                yield Static(id="prompt-origin", markup=False)
                yield Static(id="prompt-status", markup=False)
        yield FittingFooter()

    def on_mount(self) -> None:
        self.query_one("#prompt-list").border_title = "prompts and timings"
        self.query_one("#prompt-edit").border_title = "wording"
        self.reload()

    def on_screen_resume(self) -> None:
        # a restart or an apply elsewhere may have changed what the call says
        self.refresh_items()

    def reload(self) -> None:
        self.items = prompt_items(self.app.session.runtime.flow)
        view = self.query_one("#prompt-list", ListView)
        view.clear()
        for item in self.items:
            view.append(ListItem(Label(item.label, markup=False)))
        if self.items:
            self.select(self.items[0])
            self.call_after_refresh(self._highlight_first)

    def _highlight_first(self) -> None:
        view = self.query_one("#prompt-list", ListView)
        if view.index is None and self.items:
            view.index = 0  # the list shows where the editor is: Down goes to the second prompt

    def refresh_items(self) -> None:
        """New values from the call, same list, same place: the highlighted prompt stays."""
        fresh = {i.key: i for i in prompt_items(self.app.session.runtime.flow)}
        self.items = [fresh.get(i.key, i) for i in self.items]
        if self.current is not None:
            self.current = fresh.get(self.current.key, self.current)
            self._show(self.current)

    def _capture(self) -> None:
        """Keep what the text area holds as the current prompt's edit (or drop it)."""
        if self.current is None or self._loading:
            return
        text = self.query_one("#prompt-text", TextArea).text
        if text != self.current.text:
            self.edits[self.current.path] = text
        else:
            self.edits.pop(self.current.path, None)

    def select(self, item: PromptItem) -> None:
        self._capture()
        self.current = item
        self._show(item)

    def _show(self, item: PromptItem) -> None:
        kind = "milliseconds" if item.kind == "ms" else "wording"
        self.query_one("#prompt-edit").border_title = kind
        self.query_one("#prompt-label", Label).update(f"{item.label}  ({'/'.join(map(str, item.path))})")
        area = self.query_one("#prompt-text", TextArea)
        wanted = self.edits.get(item.path, item.text)
        if area.text != wanted:
            self._loading = True
            area.text = wanted
            self._loading = False
        self.show_lint()

    def on_list_view_selected(self, event: ListView.Selected) -> None:
        self._select_index(self.query_one("#prompt-list", ListView).index)

    def on_list_view_highlighted(self, event: ListView.Highlighted) -> None:
        self._select_index(self.query_one("#prompt-list", ListView).index)

    def _select_index(self, index: int | None) -> None:
        if index is not None and 0 <= index < len(self.items):
            if self.current is None or self.items[index].key != self.current.key:
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
        if item.kind == "text":
            length = measured if measured is not None else estimate_ms(text, flow.ladder)
            how = "measured" if measured is not None else "estimated"
            lines = [f"length {length / 1000:.1f}s ({how})"]
        else:
            lines = [f"{item.label}: the call uses {item.text} ms"]
        lines += [f"⚠ {p}" for p in problems] or ["✓ no problems found"]
        self.query_one("#prompt-lint", Static).update("\n".join(lines))
        in_file, shipped = self._originals()
        origin = []
        if item.key in in_file and in_file[item.key] != text:
            origin.append(f"file: {in_file[item.key]}")
        if item.key in shipped and shipped[item.key] != text and shipped[item.key] != in_file.get(item.key):
            origin.append(f"shipped: {shipped[item.key]}")
        self.query_one("#prompt-origin", Static).update(
            ("F7 reverts to the " + " / then the ".join(origin)) if origin else "same as the file"
        )
        pending = len(self.edits)
        self.query_one("#prompt-status", Static).update(
            f"{pending} edit(s) not applied or saved" if pending else "no pending edits"
        )

    def _originals(self) -> tuple[dict[str, str], dict[str, str]]:
        cache = getattr(self, "_originals_cache", None)
        document = self.app.flow_document
        if cache is None or cache[0] is not document:
            cache = (document, original_texts(document, document.get("name")))
            self._originals_cache = cache
        return cache[1]

    # -- actions ---------------------------------------------------------------------------

    def action_preview(self) -> None:
        if self.current is not None and self.current.kind == "text":
            text = self.edits.get(self.current.path, self.current.text)
            self.preview(self.current.key, text)
        elif self.current is not None:
            self.notify("a timing has nothing to speak: F5 applies it to the call")

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
            values = edit_values(self.items, self.edits)
            apply_to_call(self.app.session, self._document(), values, "edited flow")
        except ValueError as exc:
            self.notify(f"not applied: {exc}", severity="error", timeout=8)
            return
        self.edits.clear()
        self.refresh_items()
        self.notify("applied: the call uses it from its next prompt (a wait: from its next window)")

    def action_save(self) -> None:
        path = self.app.flow_path
        if path is None:
            self.notify("this flow is shipped with Lull: run `lull rehearse my_flow.json` on a copy to save", severity="warning")
            return
        self._capture()
        unsaved = self._unsaved()
        if not unsaved:
            self.notify("nothing to save")
            return
        try:
            values = edit_values(self.items, unsaved)
            save_flow_file(path, values, self.app.session.runtime.flow)
            # what is saved is the flow now: the running call uses it too
            apply_to_call(self.app.session, self._document(), values, str(path))
        except (OSError, ValueError) as exc:
            self.notify(f"not saved: {exc}", severity="error", timeout=8)
            return
        self.app.flow_document = json.loads(path.read_text(encoding="utf-8"))
        self.edits.clear()
        self.refresh_items()  # the list keeps its place: the next Down moves from here
        self.notify(f"saved {path}; the call uses it from its next prompt")

    def _unsaved(self) -> dict[tuple, str]:
        """Pending edits, and applied edits the file does not hold yet."""
        in_file, _ = self._originals()
        out = {item.path: item.text for item in self.items if item.key in in_file and in_file[item.key] != item.text}
        out.update(self.edits)
        return out

    def action_revert(self) -> None:
        item = self.current
        if item is None:
            return
        in_file, shipped = self._originals()
        shown = self.edits.get(item.path, item.text)
        if item.key in in_file and shown != in_file[item.key]:
            target, where = in_file[item.key], "the file's"
        elif item.key in shipped and shown != shipped[item.key]:
            target, where = shipped[item.key], "the shipped"
        else:
            self.notify("already the file's and the shipped value")
            return
        self.query_one("#prompt-text", TextArea).text = target
        self._capture()
        self.show_lint()
        self.notify(f"reverted to {where} value: F5 applies it to the call, F6 saves it")

    def _document(self) -> dict:
        return self.app.flow_document
