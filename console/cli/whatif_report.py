"""The text of `lull sessions replay CORPUS --summary`: before and after, with intervals."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ._app import out, plain, print_text
from .verdicts import print_left_out, print_verdict_line


def _interval(ci: list[float] | None, fmt: str) -> str:
    return "" if ci is None else f" [{fmt.format(ci[0])} to {fmt.format(ci[1])}]"


def _share(row: dict) -> tuple[str, str, str]:
    n = row["n"]

    def side(k: int, share: float | None, ci: list[float] | None) -> str:
        return f"{k}/{n} {share:.1%}{_interval(ci and [c * 100 for c in ci], '{:.1f}')}" if n else "-"
    change = "-" if row["change"] is None else f"{row['change'] * 100:+.1f} pt{_interval(row['change_ci'] and [c * 100 for c in row['change_ci']], '{:+.1f}')}"
    return (side(row["before"], row["before_share"], row["before_ci"]), side(row["after"], row["after_share"], row["after_ci"]), change)


def _rate(row: dict) -> tuple[str, str, str]:
    def side(mean: float | None, ci: list[float] | None) -> str:
        return "-" if mean is None else f"{mean:.2f}{_interval(ci, '{:.2f}')}"
    change = "-" if row["change"] is None else f"{row['change']:+.2f}{_interval(row['change_ci'], '{:+.2f}')}"
    return side(row["before"], row["before_ci"]), side(row["after"], row["after_ci"]), change


def _median(row: dict) -> str:
    if row["median_ms"] is None:
        return "- (none answered)"
    ci = row["ci_ms"]
    return f"{row['median_ms'] / 1000:.2f}s{_interval(ci and [c / 1000 for c in ci], '{:.2f}s')} of {row['n']}"


def print_whatif(data: dict, before: str, after: str) -> None:
    n = data["sessions"]
    if n:  # none replayed: no table of zeros that reads as a verdict, only why (below)
        _print_figures(data, before, after)
    print_whatif_left_out(data)


def _print_figures(data: dict, before: str, after: str) -> None:
    n = data["sessions"]
    out.print(plain(f"What-if over {n} session(s): {before} (before) against {after} (after)"))
    out.print(plain(f"  {data['caveat']}"))
    table = Table(title_justify="left", title="Per session (95 % intervals; the change is paired, session by session)")
    for column in ("figure", "n", "before", "after", "change"):
        table.add_column(column, overflow="fold")  # an outcome's name is folded, never cut
    table.add_row("reminders a session", str(n), *_rate(data["reminders_per_session"]))
    table.add_row("sessions the ladder closed", str(n), *_share(data["sessions_closed"]))
    table.add_row("interruptions a session", str(n), *_rate(data["interruptions_per_session"]))
    for label, row in data["episode_outcomes"].items():
        table.add_row(plain(f"sessions with an episode {label}"), str(n), *_share(row))
    for label, row in data["session_outcomes"].items():
        table.add_row(plain(f"sessions ended {label}"), str(n), *_share(row))
    out.print(table)
    answer = data["time_to_answer"]
    out.print(plain(f"time to answer (median, episode start to its answer): before {_median(answer['before'])}; "
                    f"after {_median(answer['after'])} episodes"))


def print_whatif_left_out(data: dict, console: Console | None = None) -> None:
    """The sessions the what-if does not count, each with why, and what it stands on."""
    print_left_out("session(s)", "could not be replayed under the edit, not counted", data["not_replayed"],
                   console, style="bold yellow")
    print_left_out("damaged session(s)", "(their recording stops before their end), not counted",
                   data["partly_replayed"], console)
    if data["other_flow"]:
        print_text((f"{len(data['other_flow'])} journal(s) of another flow, not replayed: {', '.join(data['other_flow'][:5])}",
                    "yellow"), console=console)
    print_verdict_line(data["verdict"], console, none_could="could be replayed")
