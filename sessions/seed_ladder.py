"""Seed 000's reference silence ladder, transcribed as the seed prints it (its
`silence_ladder.py`): the yardstick `lull bench core` measures the core against.

It is a sketch, not a policy: one window, three actions, a generation check and a
prompt token, no trace. What it costs per event is the least a ladder with generations
can cost in Python; the core does more (trace records, holds, recovery, tools), and the
bench says by how much more, per event, on the same schedule.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Timer:
    generation: int
    due: int


class Ladder:
    def __init__(self, deadline=100):
        self.deadline = deadline
        self.prompt_token = None
        self.generation = 0
        self.stage = 0
        self.state = "collecting"
        self.current = None
        self.actions = []

    def arm(self, now, wait):
        if wait <= 0 or self.state != "collecting":
            raise ValueError("arm requires positive wait and collecting state")
        self.generation += 1
        self.current = Timer(self.generation, now + wait)
        return self.current

    def speech(self):
        if self.state == "closed":
            return "closed"
        self.generation += 1
        self.current = None
        self.state = "collecting"
        self.prompt_token = None
        return "cancel_prompt_and_collect"

    def hold(self):
        if self.state == "closed":
            return "closed"
        self.generation += 1
        self.current = None
        self.state = "held"
        self.prompt_token = None
        return "hold"

    def resume(self):
        if self.state == "closed":
            return "closed"
        self.generation += 1
        self.current = None
        self.state = "collecting"
        return "collect"

    def fire(self, timer, now):
        if (self.state != "collecting" or self.current != timer
                or timer.generation != self.generation or now < timer.due):
            return "ignore"
        self.current = None
        self.generation += 1
        actions = ("gentle_check", "offer_route", "close_incomplete")
        action = actions[self.stage]
        self.stage += 1
        self.state = "closed" if self.stage == len(actions) else "prompting"
        self.prompt_token = self.generation if self.state == "prompting" else None
        self.actions.append(action)
        return action

    def playback_complete(self, token):
        if self.state == "prompting" and token == self.prompt_token:
            self.prompt_token = None
            self.state = "collecting"

    def expire(self, now):
        if now >= self.deadline and self.state != "closed":
            self.generation += 1
            self.current = None
            self.prompt_token = None
            self.state = "closed"
            self.actions.append("close_incomplete")
        return self.state


__all__ = ["Ladder", "Timer"]
