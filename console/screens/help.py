"""The help screen (F1 on the rehearse screen, or ?): what the console shows, in its own words."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from ..widgets.footer import FittingFooter

WORDS = [
    ("Generation", "Every armed timer (listening window, hold, recovery, watchdog, deadline) carries a "
     "generation number, shown as “gen 7” in the timer lane and “g7” on the timeline. Anything that "
     "changes the situation (the caller speaks, a hold starts, a prompt is requested) bumps it."),
    ("Stale rejection", "A callback whose generation or prompt token no longer matches (a timer that "
     "fired after the caller spoke, a duplicate delivery, a completion for a cancelled prompt) is "
     "ignored and recorded as rejected, with its reason: “✗ timer_fired 5: duplicate_delivery”."),
    ("Origin", "Where a listening window was armed from: “observed” (the endpoint reported that the "
     "prompt finished playing) or “estimated” (no report came, so send time plus the estimated "
     "duration; shown in yellow). Other timers name their cause: episode_start, turn_closed, resumed."),
    ("Estimated completion", "A prompt whose completion report never arrived is finished by the "
     "estimate: the prompt lane says “completed (estimated: no report from the endpoint)”, and the "
     "window after it has the estimated origin. A report that comes later is recorded, not acted on."),
    ("Badges", "HOLD: the caller asked for time; the ladder waits (⏸) and the hold budget bar fills. "
     "RECOVERY: the input path failed, which is not silence. TOOL WAIT: a tool runs; no-input timers "
     "are suspended. CLOSING: the final message is queued. CLOSED: the call is over. CALLER SPEAKING: "
     "a caller turn is open."),
    ("The ladder", "Stages in order with their waits; ▶ is the running stage, ⏸ a stage waiting on a "
     "hold. The bars are the hold budget and the episode's total bound."),
    ("Timeline", "The current episode on one time axis: windows and holds (━, ╌ still armed, ✕ fired, "
     "┤ invalidated), the agent's prompts (· queued, █ playing, ✗ cancelled, / cut off, ? estimated), "
     "the caller's turns (▒) and tools (≈). │ marks now (or the cursor in the sessions screen)."),
    ("Why", "Choose a line of the event log (arrow keys, then enter, or a click): the why panel shows "
     "the rule behind that move, the input that led to it and the timer it came from."),
    ("Edits", "In the prompts screen (F2): ctrl+a selects the whole prompt (type to replace it), F5 applies an edit to the running call, F6 saves it into the "
     "flow file (only the edited value changes), F7 reverts to the file's wording and then to the "
     "shipped one. Waits and the hold and episode bounds are edited the same way. ctrl+r restarts "
     "the call with every applied edit, so edit, apply, hear it again is a loop."),
]


class HelpScreen(ModalScreen):
    BINDINGS = [
        Binding("escape,f1,question_mark,q", "dismiss", "Close help", id="close_help"),
    ]

    def __init__(self, under: Screen | None = None) -> None:
        super().__init__()
        self.under = under

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Static(self._text(), id="help-text", markup=False)
        yield FittingFooter()

    def on_mount(self) -> None:
        self.query_one("#help-body").border_title = "help (escape closes)"

    def _text(self) -> Text:
        text = Text()
        for title, words in WORDS:
            text.append(f"{title}\n", style="bold")
            text.append(f"{words}\n\n")
        text.append("Keys on this screen and everywhere\n", style="bold")
        for key, description in self._keys():
            text.append(f"  {key:<10} ", style="bold cyan")
            text.append(f"{description}\n")
        notice = getattr(self.app, "notice", "")
        if notice:
            text.append(f"\n{notice}\n", style="dim")
        return text

    def _keys(self) -> list[tuple[str, str]]:
        keys = []
        seen = set()
        sources = []
        if self.under is not None:
            sources.append(self.under.BINDINGS)
        sources.append(self.app.BINDINGS)
        for bindings in sources:
            for binding in bindings:
                if not hasattr(binding, "key"):
                    continue
                key = binding.key.split(",")[0].replace("ctrl+", "^").replace("question_mark", "?")
                if key in seen:
                    continue
                seen.add(key)
                keys.append((key, binding.description or binding.action))
        keys.append(("^p", "command palette: every incident, the restart, the help, by name"))
        keys.append(("tab", "next panel (the right column scrolls with the arrow keys)"))
        return keys

    def action_dismiss(self) -> None:
        self.dismiss()
