"""An asyncio event loop on virtual time, for running framework calls (Pipecat, LiveKit) in tests.

`loop.time()` is a number the loop moves itself: when nothing is ready to run and no
file descriptor is ready, it jumps straight to the next scheduled callback instead of
sleeping. A pipeline whose timers span minutes runs in milliseconds, and the same
inputs give the same times every run. Work handed to a thread (`asyncio.to_thread`)
takes no virtual time: while any is running the loop waits for it in real time and
the clock stands still.

`settle()` is a future done once everything set off so far has run, before the clock
moves. `call_at_ranked(when, rank, callback)` breaks ties at one virtual instant: rank 0 runs
first and everything it sets off (frames through every queue) settles before rank 1
starts. The incident runner uses it for the virtual clock's rule: a callback already
queued is delivered before the timer that would race it.
"""

from __future__ import annotations

import asyncio
import selectors
import threading

# rank offsets stay far below the millisecond resolution the core's times are read at
RANK_STEP_S = 1e-7
LATE_RANK = 2  # the rank of `late_callbacks` (a core's timer, after what is queued with it)


class _VirtualSelector(selectors.DefaultSelector):
    def __init__(self, loop: VirtualTimeLoop) -> None:
        super().__init__()
        self._loop = loop

    def select(self, timeout=None):
        ready = super().select(0)
        if ready or timeout == 0:
            return ready
        if self._loop.threads_busy():
            # a thread is working for the loop: wait for its result, do not move time
            return super().select(0.05 if timeout is None else min(timeout, 0.05))
        if self._loop.release_settled():
            return []  # those waiting for the loop to settle go on, at the same instant
        if timeout is None:
            return super().select(None)  # nothing scheduled: only another thread can wake us
        self._loop.advance(timeout)
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """A selector event loop whose clock jumps to the next scheduled callback."""

    def __init__(self) -> None:
        super().__init__(_VirtualSelector(self))
        self._virtual = 0.0
        self._busy = 0
        self._busy_lock = threading.Lock()
        self.late_callbacks: list = []  # callbacks that run after everything else due with them
        self._settle_waiters: list[asyncio.Future] = []

    def time(self) -> float:
        return self._virtual

    def advance(self, seconds: float) -> None:
        self._virtual += max(0.0, seconds)

    def threads_busy(self) -> bool:
        with self._busy_lock:
            return self._busy > 0

    def settle(self) -> asyncio.Future:
        """A future done once nothing is left to run at this instant (every frame
        set off so far has gone through every queue), before the clock moves."""
        future = self.create_future()
        self._settle_waiters.append(future)
        return future

    def release_settled(self) -> bool:
        waiters, self._settle_waiters = self._settle_waiters, []
        for future in waiters:
            if not future.done():
                future.set_result(None)
        return bool(waiters)

    def call_at_ranked(self, when: float, rank: int, callback, *args):
        return super().call_at(when + rank * RANK_STEP_S, callback, *args)

    def call_at(self, when, callback, *args, context=None):
        if any(callback == late for late in self.late_callbacks):
            when += LATE_RANK * RANK_STEP_S
        return super().call_at(when, callback, *args, context=context)

    def run_in_executor(self, executor, func, *args):
        with self._busy_lock:
            self._busy += 1
        future = super().run_in_executor(executor, func, *args)

        def done(_future) -> None:
            with self._busy_lock:
                self._busy -= 1

        future.add_done_callback(done)
        return future


class VirtualTimePolicy(asyncio.DefaultEventLoopPolicy):
    """An event loop policy whose new loops are `VirtualTimeLoop`s: a script that calls
    `asyncio.run(main())` runs, unchanged, on virtual time (the README's agents in tests)."""

    def new_event_loop(self) -> VirtualTimeLoop:
        return VirtualTimeLoop()


def run_virtual(coro):
    """Run `coro` to the end on a fresh virtual-time loop; return its result."""
    loop = VirtualTimeLoop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()


__all__ = ["LATE_RANK", "RANK_STEP_S", "VirtualTimeLoop", "VirtualTimePolicy", "run_virtual"]
