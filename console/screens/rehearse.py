"""The rehearse screen: the live call and what its no-input policy is doing (C2)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Static

from ladder import SetRouteAvailability

from ..headless import Incidents
from ..messages import AgentLine, SessionRecord
from ..widgets import (
    EventLog,
    LadderPanel,
    PromptLane,
    RoutesPanel,
    TimerLane,
    Transcript,
)


class RehearseScreen(Screen):
    # function keys, so they work while the caller's turn is being typed
    BINDINGS = [
        Binding("f2", "app.switch_mode('editor')", "Prompts", id="editor"),
        Binding("f3", "app.switch_mode('incidents')", "Incidents", id="incidents"),
        Binding("f4", "inject('fail input')", "Fail input", id="fail_input"),
        Binding("f5", "inject('recover input')", "Recover", id="recover_input"),
        Binding("f6", "inject('dup')", "Dup timer", id="duplicate_timer"),
        Binding("f7", "lose_completion", "Lose playback", id="lose_completion"),
        Binding("f8", "delay_completion", "Delay playback", id="delay_completion"),
        Binding("f9", "cycle_tool", "Tool mode", id="tool_mode"),
        Binding("f10", "inject('hangup')", "Hang up", id="hangup"),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.incidents: Incidents | None = None
        self.tool_mode = "ok"
        self._refresh_pending = False

    @property
    def session(self):
        return self.app.session

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield Static(id="notice")
                yield Transcript(id="transcript", wrap=True, markup=False)
                yield Input(placeholder="caller says… (Enter); keys below inject incidents", id="caller")
                yield Static(id="media")
            with Vertical(id="right"):
                yield LadderPanel(id="ladder", classes="panel")
                yield TimerLane(id="timers", classes="panel")
                yield PromptLane(id="prompts", classes="panel")
                yield RoutesPanel(self.session.runtime.ladder.policy.routes, id="routes", classes="panel")
        yield EventLog(id="log")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#ladder").border_title = "silence ladder"
        self.query_one("#timers").border_title = "timer lane"
        self.query_one("#prompts").border_title = "prompt lane"
        self.query_one("#routes").border_title = "fallback routes"
        self.query_one("#transcript").border_title = "transcript"
        self.query_one("#log").border_title = "event log"
        self.query_one("#notice", Static).update(self.app.notice)
        self.query_one("#media", Static).update(self.app.media_line())
        self.incidents = Incidents(self.session)
        self.set_interval(0.1, self.refresh_panels)  # countdowns move between events
        self.refresh_panels()

    # -- the call's records ---------------------------------------------------------------

    def on_session_record(self, message: SessionRecord) -> None:
        record = message.record
        self.query_one(TimerLane).note(record)
        self.query_one(RoutesPanel).note(record)
        self.query_one(EventLog).add(message.now, record, self.app.verbose)
        if record.get("effect") == "Trace" and record.get("kind") == "utterance":
            matched = record.get("matched")
            detail = f"intent {matched} {record.get('score', 0):.2f}" if matched else "unclear"
            self.query_one(Transcript).add("", f"→ {record['reason']} ({detail})")
        # one input yields a dozen records: redraw the panels once, after the batch
        if not self._refresh_pending:
            self._refresh_pending = True
            self.call_later(self.refresh_panels)

    def on_agent_line(self, message: AgentLine) -> None:
        self.query_one(Transcript).add(message.who, message.text)

    def refresh_panels(self) -> None:
        self._refresh_pending = False
        session = self.session
        now = session.now_ms()
        snapshot = session.runtime.ladder.snapshot()
        self.query_one(LadderPanel).show(snapshot, session.runtime.ladder.policy, now)
        self.query_one(TimerLane).show(snapshot, now)
        self.query_one(PromptLane).show(snapshot)
        self.query_one("#media", Static).update(self.app.media_line())
        flow = session.runtime
        active = ", ".join(flow.active_stages()) if not flow.ended else "ended"
        self.sub_title = f"flow {flow.flow.spec.name}: {active}"

    # -- the designer's actions ----------------------------------------------------------

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "caller":
            return
        text = event.value.strip()
        event.input.value = ""
        if text:
            self.app.say(text)

    def on_routes_panel_toggled(self, message: RoutesPanel.Toggled) -> None:
        self.session.feed(SetRouteAvailability(message.route, message.available))

    def on_routes_panel_toggled_by_name(self, route: str, available: bool) -> None:
        self.session.feed(SetRouteAvailability(route, available))

    def action_cycle_tool(self) -> None:
        modes = ["slow", "fail", "unknown", "ok"]
        self.tool_mode = modes[(modes.index(self.tool_mode) + 1) % len(modes)]
        self.action_tool(self.tool_mode)

    def action_inject(self, command: str) -> None:
        assert self.incidents is not None
        error = self.incidents.run(command)
        if error:
            self.notify(error, severity="warning")

    def action_tool(self, mode: str) -> None:
        tools = list(self.session.flow.tools)
        if not tools:
            self.notify("this flow declares no tools", severity="warning")
            return
        assert self.incidents is not None
        self.incidents.run(f"tool {tools[0]} {mode}")
        self.notify(f"next {tools[0]} calls: {mode}")

    def action_call_tool(self, tool: str) -> None:
        from ladder import RequestTool

        self.session.feed(RequestTool(tool))

    def action_lose_completion(self) -> None:
        self.app.backend.lose_next_completion = True
        self.notify("the next prompt's playback completion will be lost")

    def action_delay_completion(self) -> None:
        self.app.backend.delay_next_completion_ms = 3000
        self.notify("the next prompt's playback completion will arrive 3 s late")
