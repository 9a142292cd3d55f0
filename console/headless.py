"""`lull rehearse --headless`: a live call with no TUI, printing the event stream.

Lines on standard input are caller turns. When input is piped rather than typed, each
caller line waits until the agent has finished speaking, as a caller would. Lines
starting with "/" inject incidents:
  /sleep 2.5                 wait (for scripted input)
  /fail input|output|recognizer   /recover input|output|recognizer
  /hangup                    /quit
  /tool NAME ok|fail|unknown|slow [MS]   the next calls of a tool
  /route ID on|off           make a fallback route (un)available
  /dup                       deliver the last fired timer again (a duplicate callback)
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable

from sessions.live import LiveSession
from sessions.live_incidents import LiveIncidents

from .describe import describe, seconds

HELP = __doc__.split("\n\n", 1)[1]


async def rehearse_headless(
    session: LiveSession,
    say: Callable[[str], None],
    *,
    lines=None,
    write: Callable[[str], None] = print,
    verbose: bool = False,
    speaking: Callable[[], bool] | None = None,
    redact: bool = False,
) -> str | None:
    """Run the call until it closes (or /quit); returns the session outcome.

    With `redact`, the stream is redacted like the journal (G6): for output that goes
    to a file or a pipe, where it is a log, not a screen.
    """

    def show(now: float, kind: str, record: dict) -> None:
        text = describe(session.runtime.redact(record) if redact else record, verbose)
        if text is not None:
            write(f"[{seconds(now):>6}] {text}")

    session.listeners.append(show)
    incidents = LiveIncidents(session)
    queue: asyncio.Queue[str | None] = asyncio.Queue()
    loop = asyncio.get_running_loop()
    source = lines if lines is not None else sys.stdin
    interactive = lines is None and sys.stdin.isatty()

    def reader() -> None:  # blocking reads stay off the loop
        try:
            for line in source:
                loop.call_soon_threadsafe(queue.put_nowait, line.rstrip("\n"))
        except (OSError, ValueError):
            pass  # the terminal went away (hung up, closed): input has ended
        try:
            loop.call_soon_threadsafe(queue.put_nowait, None)
        except RuntimeError:
            pass  # the call already ended and its loop closed: nobody is reading

    await session.start()
    threading.Thread(target=reader, daemon=True).start()
    closed = asyncio.ensure_future(session.closed.wait())
    while not session.closed.is_set():
        getter = asyncio.ensure_future(queue.get())
        done, _ = await asyncio.wait({getter, closed}, return_when=asyncio.FIRST_COMPLETED)
        if getter not in done:
            getter.cancel()
            break
        line = getter.result()
        if line is None:
            await closed  # input ended: the call goes on until it closes by itself
            break
        if line.startswith("/"):
            command = line[1:].strip()
            if command == "quit":
                await session.stop()
                break
            if command.startswith("sleep"):
                try:
                    await asyncio.sleep(float(command.split()[1]))
                except (IndexError, ValueError):
                    write("error: /sleep expects seconds, e.g. /sleep 2.5")
                continue
            error = incidents.run(command)
            if error:
                write(f"error: {error}")
        elif line.strip():
            if speaking is not None and not interactive:
                while speaking() and not session.closed.is_set():
                    await asyncio.sleep(0.05)
            say(line.strip())
    return session.ended_reason
