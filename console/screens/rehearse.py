"""The rehearse screen: the live call and what its no-input policy is doing (C2).

Left: the transcript, the caller box, the media line and the event log. Right: a
scrollable column of state panels (notice, ladder, timer lane, prompt lane, timeline,
routes), so every panel is reachable at every terminal size. The voice edge's
observations read as lines of the event log too (each end-of-turn decision and why, each
answered turn's perceived wait), and the media line ends with the caller's wait: the
last answered turn's and the call's median so far. The screen reads the
app's call history, so nothing is lost while another screen shows. Panels redraw when
the call changes and once a second for countdowns; nothing else wakes it.
"""

from __future__ import annotations

from statistics import median

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Header, Input, Static

from ladder import SetRouteAvailability

from ..describe import how_read, wait_seconds
from ..messages import CallRestarted, HistoryChanged
from ..widgets import (
    EventLog,
    LadderPanel,
    PromptLane,
    RoutesPanel,
    Timeline,
    TimerLane,
    Transcript,
    WhyPanel,
)
from ..widgets.footer import FittingFooter
from ..widgets.panel import Panel


class RehearseScreen(Screen):
    AUTO_FOCUS = "#caller"  # the first words typed are the caller's
    # function keys, so they work while the caller's turn is being typed
    BINDINGS = [
        Binding("f1", "app.help", "Help", id="help"),
        Binding("f2", "app.switch_mode('editor')", "Prompts", id="editor"),
        Binding("f3", "app.switch_mode('incidents')", "Incidents", id="incidents"),
        Binding("f4", "inject('fail input')", "Fail input", id="fail_input"),
        Binding("f5", "inject('recover input')", "Recover", id="recover_input"),
        Binding("f6", "inject('dup')", "Dup timer", id="duplicate_timer"),
        Binding("f7", "lose_completion", "Lose done", id="lose_completion"),
        Binding("f8", "delay_completion", "Delay done", id="delay_completion"),
        Binding("f9", "cycle_tool", "Tool", id="tool_mode"),
        Binding("f10", "inject('hangup')", "Hang up", id="hangup"),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.tool_mode = "ok"
        self._lines_seen = 0
        self._records_seen = 0
        self.waits: list[float] = []  # this call's perceived gaps (ms), answered turns only

    @property
    def session(self):
        return self.app.session

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield Transcript(id="transcript")
                yield Input(placeholder="caller says… (Enter); F-keys inject incidents", id="caller", select_on_focus=False)
                yield Static(id="media", markup=False)
                yield EventLog(id="log")
            with VerticalScroll(id="right"):
                yield Static(id="notice", markup=False)
                yield LadderPanel(id="ladder", classes="panel")
                yield TimerLane(id="timers", classes="panel")
                yield PromptLane(id="prompts", classes="panel")
                yield Timeline(id="timeline", classes="panel")
                yield RoutesPanel(self.session.runtime.ladder.policy.routes, id="routes", classes="panel")
                yield WhyPanel(id="why", classes="panel")
        yield FittingFooter()

    def on_mount(self) -> None:
        for wid, title in (
            ("#ladder", "silence ladder"), ("#timers", "timer lane"), ("#prompts", "prompt lane"),
            ("#timeline", "timeline"), ("#routes", "fallback routes"), ("#transcript", "transcript"),
            ("#log", "event log (enter on a line: why)"), ("#why", "why"),
        ):
            self.query_one(wid).border_title = title
        notice = self.query_one("#notice", Static)
        notice.update(self.app.notice)
        notice.display = bool(self.app.notice)
        self.app.rehearse_screen = self
        self._media_text = ""
        self.show_media()
        if hasattr(self.app.backend, "level_dbfs"):  # a live mic level: a small, cheap poll
            self.set_interval(0.25, self.show_media)
        self.set_interval(1.0, self.refresh_panels)  # countdowns move once a second
        self.catch_up()

    def on_screen_resume(self) -> None:
        self.catch_up()

    # -- the call's records ---------------------------------------------------------------

    def on_history_changed(self, message: HistoryChanged) -> None:
        self.catch_up()

    def catch_up(self) -> None:
        """Show everything the call said and decided since this screen last looked."""
        history = self.app.history
        self.app.history_read()
        transcript = self.query_one(Transcript)
        for who, text in history.lines_since(self._lines_seen):
            transcript.add(who, text)
        self._lines_seen = history.lines_total
        records = history.records_since(self._records_seen)
        self._records_seen = history.records_total
        if not records:
            return
        timers, routes, log = self.query_one(TimerLane), self.query_one(RoutesPanel), self.query_one(EventLog)
        timeline = self.query_one(Timeline)
        waited = False
        for now, record in records:
            timers.note(record)
            routes.note(record)
            log.add(now, record, self.app.verbose)
            timeline.add(now, record)
            if record.get("effect") == "Trace" and record.get("kind") == "utterance":
                # how the turn was read, and what the reading came from
                transcript.add("", f"→ {record['reason']}{how_read(record)}")
            elif record.get("effect") == "Observation" and record.get("kind") == "turn_latency":
                gap = record.get("perceived_gap_ms")
                if isinstance(gap, (int, float)) and not isinstance(gap, bool):
                    self.waits.append(float(gap))
                    waited = True
        if waited:
            self.show_media()
        self.refresh_panels()

    async def on_call_restarted(self, message: CallRestarted) -> None:
        await self.query_one(RoutesPanel).remove()
        new = RoutesPanel(self.session.runtime.ladder.policy.routes, id="routes", classes="panel")
        new.border_title = "fallback routes"
        await self.query_one("#right").mount(new, before=self.query_one(WhyPanel))
        self.query_one(TimerLane).rejected = []
        self.query_one(Timeline).reset()
        self.waits = []
        self.show_media()
        self.query_one(EventLog).add_line(f"—— call {self.app.history.calls} (restarted, applied edits kept) ——")
        self.catch_up()

    def refresh_panels(self) -> None:
        session = self.session
        now = session.now_ms()
        snapshot = session.runtime.ladder.snapshot()
        ended = session.closed.is_set()
        ladder = session.runtime.ladder
        self.query_one(LadderPanel).show(snapshot, ladder.shown_policy, now, ladder.stage_words())
        self.query_one(TimerLane).show(snapshot, now, ended=ended)
        self.query_one(PromptLane).show(snapshot, ended=ended)
        self.query_one(Timeline).show(now)
        flow = session.runtime
        active = ", ".join(flow.active_stages()) if not flow.ended else "ended"
        subtitle = f"flow {flow.flow.spec.name}: {active}"
        if self.app.history.calls > 1:
            subtitle = f"call {self.app.history.calls} · " + subtitle
        if self.sub_title != subtitle:
            self.sub_title = subtitle

    def wait_figure(self) -> str:
        """The caller's perceived wait: the last answered turn's, and the call's median."""
        if not self.waits:
            return ""
        return f"wait {wait_seconds(self.waits[-1])} (median {wait_seconds(median(self.waits))})"

    def show_media(self) -> None:
        text = self.app.media_line()
        figure = self.wait_figure()
        if figure:
            text = f"{text}  ·  {figure}"
        if text != self._media_text:
            self._media_text = text
            self.query_one("#media", Static).update(text)

    def show_route(self, route: str, available: bool) -> None:
        self.query_one(RoutesPanel).set_available(route, available)

    # -- the designer's actions ----------------------------------------------------------

    def on_key(self, event: events.Key) -> None:
        """Typing anywhere on this screen types the caller's turn."""
        focused = self.focused
        if event.is_printable and event.character and not isinstance(focused, Input):
            caller = self.query_one("#caller", Input)
            caller.focus()
            caller.insert_text_at_cursor(event.character)
            event.stop()
            event.prevent_default()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "caller":
            return
        text = event.value.strip()
        event.input.value = ""
        if text:
            self.app.say(text)

    def on_routes_panel_toggled(self, message: RoutesPanel.Toggled) -> None:
        self.session.feed(SetRouteAvailability(message.route, message.available))

    def on_event_log_chosen(self, message: EventLog.Chosen) -> None:
        self.query_one(WhyPanel).explain(message.now, message.record, self.app.history)
        self.query_one("#right", VerticalScroll).scroll_to_widget(self.query_one(WhyPanel))

    def action_cycle_tool(self) -> None:
        modes = ["slow", "fail", "unknown", "ok"]
        self.tool_mode = modes[(modes.index(self.tool_mode) + 1) % len(modes)]
        self.action_tool(self.tool_mode)

    def action_inject(self, command: str) -> None:
        self.app.inject(command)

    def action_tool(self, mode: str) -> None:
        tool = self.app.set_tool_mode(mode)
        if tool:
            self.notify(f"next {tool} calls: {mode}")

    def action_lose_completion(self) -> None:
        self.app.in_order("lose done", lambda: setattr(self.app.backend, "lose_next_completion", True))
        self.notify("the next prompt's playback completion will be lost")

    def action_delay_completion(self) -> None:
        self.app.in_order("delay done", lambda: setattr(self.app.backend, "delay_next_completion_ms", 3000))
        self.notify("the next prompt's playback completion will arrive 3 s late")


def panel_text(widget) -> str:
    """A panel's text as shown (tests use it)."""
    if isinstance(widget, Panel):
        return widget.shown_text
    return str(widget.render())


__all__ = ["RehearseScreen", "panel_text"]
