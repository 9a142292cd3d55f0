"""A panel that redraws only when what it shows changed (idle is idle)."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text
from textual.widgets import Static


class Panel(Static):
    """A Static fed whole renderables; an identical Text is not drawn again."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("markup", False)
        super().__init__(*args, **kwargs)
        self._shown: object = None
        self.updates = 0  # how many times it was really redrawn (tests read it)

    def set_content(self, content: RenderableType, key: object = None) -> bool:
        """Show `content` unless it equals what is shown (`key` stands for it when it is
        not a Text). Returns whether the panel was redrawn."""
        key = key if key is not None else (content.plain, content.spans) if isinstance(content, Text) else content
        if key == self._shown:
            return False
        self._shown = key
        self._content_shown = content
        self.updates += 1
        self.update(content)
        return True

    @property
    def shown_text(self) -> str:
        """What the panel shows, as plain text at its width (tests read it)."""
        from rich.console import Console

        content = getattr(self, "_content_shown", None)
        if content is None:
            return ""
        console = Console(width=max(20, self.content_region.width or 80), record=True, file=_Null(), color_system=None)
        console.print(content)
        return console.export_text()


class _Null:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass
