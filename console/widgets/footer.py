"""The key footer, fitted to the terminal's width.

Textual's Footer cuts off whatever does not fit, so at 80-120 columns the last keys
(quit among them) were never shown. This one gives every key its name when all fit;
else it shortens names, then shows keys alone, from the last key back, until the row
fits. Help and quit always keep their names, and F1 (or ?) lists every key in full.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.widgets import Footer

# shorter names for the footer only; the bindings' descriptions stay whole for help
SHORT_NAMES: dict[str, str] = {
    "fail_input": "Fail",
    "recover_input": "Recover",
    "duplicate_timer": "Dup",
    "lose_completion": "Lose",
    "delay_completion": "Delay",
    "tool_mode": "Tool",
    "restart_call": "Restart",
    "run_all": "Run",
    "save_live": "Save live",
    "play_audio": "Play",
    "paired": "Replay",
    "save": "Save",
}
ALWAYS_NAMED = frozenset({"help", "quit"})
PALETTE_WIDTH = 11  # "▏^p palette", docked at the right


@dataclass(frozen=True)
class FooterItem:
    id: str | None
    key: str  # as displayed
    name: str


def item_width(key: str, name: str) -> int:
    """A compact FooterKey's cells: the key, a space and the name, its right margin."""
    return len(key) + (1 + len(name) if name else 0) + 1


def fit_names(items: list[FooterItem], width: int) -> list[str]:
    """The name each key shows so the row fits `width`: whole names if they fit; else,
    from the last key back, short names, then keys alone (help and quit keep theirs);
    then short names back, from the first key on, where they still fit."""
    names = [item.name for item in items]

    def total() -> int:
        return sum(item_width(item.key, name) for item, name in zip(items, names))

    for step in ("short", "bare"):
        for i in reversed(range(len(items))):
            if total() <= width:
                return names
            item = items[i]
            if step == "short":
                names[i] = SHORT_NAMES.get(item.id or "", names[i])
            elif item.id not in ALWAYS_NAMED:
                names[i] = ""
    # taking whole names off can leave room: give short names back, first keys first
    for i, item in enumerate(items):
        if not names[i] and item.name:
            names[i] = SHORT_NAMES.get(item.id or "", item.name)
            if total() > width:
                names[i] = ""
    return names


class FittingFooter(Footer):
    """Footer(compact=True) whose key names fit its width (see fit_names); laid out
    again when the terminal is resized."""

    def __init__(self, **kwargs) -> None:
        super().__init__(compact=True, **kwargs)
        self._fitted_for = -1

    def compose(self):
        widgets = list(super().compose())
        # FooterKeys (textual does not export the class): a key, its name, its action
        keys = [w for w in widgets if hasattr(w, "key_display") and not w.has_class("-command-palette")]
        ids = {binding.action: binding.id for (_, binding, _, _) in self.screen.active_bindings.values()}
        items = [FooterItem(ids.get(k.action), k.key_display, k.description) for k in keys]
        self._fitted_for = self.app.size.width
        room = self._fitted_for - (PALETTE_WIDTH if len(keys) < len(widgets) else 0)
        for key, name in zip(keys, fit_names(items, room)):
            key.description = name
        yield from widgets

    def on_resize(self) -> None:
        if self.app.size.width != self._fitted_for and self.is_attached:
            self.call_after_refresh(self.recompose)
