"""The wait coordinator (seed 001, W1-W7).

It remembers the long-wait decisions of caller turns so the missing-response
watchdog does not treat a deliberate pause as a failed answer, and grants one
acknowledgement per pause. It decides nothing about audio and reads no clock: the
controller asks it questions and acts on the answers.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import NamedTuple


class TurnRef(NamedTuple):
    """A caller turn's identity and sequence number (W1). A named tuple: the core makes
    and hashes several an event, and a tuple does both at a fraction of a frozen
    dataclass's cost."""

    turn: str
    seq: int


@dataclass(frozen=True)
class Claim:
    """A saved wait decision, collected by the turn-stop handler.

    `should_acknowledge` is permission to acknowledge, not proof that audio played.
    """

    turn: TurnRef
    should_acknowledge: bool


class WaitCoordinator:
    """Two states, normal and waiting, plus a bounded record of wait turns."""

    def __init__(self, max_records: int = 32) -> None:
        self.max_records = max_records
        self.is_waiting = False
        # turn -> None: every wait turn is remembered (so its stop skips the watchdog)
        self._claimed: OrderedDict[TurnRef, None] = OrderedDict()
        # the turns that may still acknowledge: at most the first of each pause
        self._ack_claims: set[TurnRef] = set()
        # turns whose stop callback ran, so a later decision knows the order (W2)
        self._closed: OrderedDict[TurnRef, None] = OrderedDict()
        self.evicted = 0

    # -- the seed's two calls -----------------------------------------------------------

    def claim_long_wait(self, turn: TurnRef | dict) -> bool:
        """Record a long-wait decision for `turn`. False if it cannot safely defer.

        A missing turn identity leaves the ordinary incomplete-turn timeout in place.
        """
        ref = _as_ref(turn)
        if ref is None:
            return False
        first_marker = not self.is_waiting
        self.is_waiting = True
        self._claimed[ref] = None
        self._claimed.move_to_end(ref)
        if first_marker:
            self._ack_claims.add(ref)
        while len(self._claimed) > self.max_records:
            old, _ = self._claimed.popitem(last=False)
            self._ack_claims.discard(old)
            self.evicted += 1
        return True

    def consume_claim(self, turn: str, seq: int) -> Claim | None:
        """Collect the saved decision when the turn closes (or None: arm the watchdog)."""
        ref = _new_ref(TurnRef, (turn, seq))
        closed = self._closed
        closed[ref] = None
        while len(closed) > self.max_records:
            closed.popitem(last=False)
        if ref not in self._claimed:
            return None
        del self._claimed[ref]
        should = ref in self._ack_claims
        self._ack_claims.discard(ref)
        return Claim(ref, should)

    # -- the rest of the lifecycle ------------------------------------------------------

    def may_acknowledge(self, turn: str, seq: int) -> bool:
        return (turn, seq) in self._ack_claims  # a plain tuple hashes and compares as its TurnRef

    def is_claimed(self, turn: str, seq: int) -> bool:
        return (turn, seq) in self._claimed

    def mark_closed(self, turn: str, seq: int) -> None:
        self._closed[_new_ref(TurnRef, (turn, seq))] = None
        while len(self._closed) > self.max_records:
            self._closed.popitem(last=False)

    def is_closed(self, turn: str, seq: int) -> bool:
        return (turn, seq) in self._closed

    def resume(self, turn: str | None = None, seq: int | None = None) -> bool:
        """The caller is back. Ends the pause; returns True if a pause ended.

        Older wait turns stay recognisable but lose permission to acknowledge (W4).
        If the caller resumed within a still-open wait turn, that turn needs an
        ordinary answer again, so its wait record is removed.
        """
        was_waiting = self.is_waiting
        self.is_waiting = False
        self._ack_claims.clear()
        if turn is not None and seq is not None:
            ref = (turn, seq)
            if ref not in self._closed:
                self._claimed.pop(ref, None)
        return was_waiting

    def clear(self) -> None:
        """Cleanup (assistant inactive or worker gone): drop every pending record (W6)."""
        self.is_waiting = False
        self._claimed.clear()
        self._ack_claims.clear()
        self._closed.clear()

    @property
    def pending(self) -> int:
        return len(self._claimed)

    def snapshot(self) -> dict:
        return {
            "waiting": self.is_waiting,
            "claimed": [[r.turn, r.seq] for r in self._claimed],
            "may_acknowledge": sorted([r.turn, r.seq] for r in self._ack_claims),
        }


_new_ref = tuple.__new__  # a TurnRef without its named tuple's Python-level __new__


def _as_ref(turn: TurnRef | dict) -> TurnRef | None:
    if isinstance(turn, TurnRef):
        return turn
    turn_id = turn.get("user_turn_id")
    seq = turn.get("user_turn_sequence")
    if not turn_id or not isinstance(seq, int):
        return None
    return TurnRef(turn_id, seq)
