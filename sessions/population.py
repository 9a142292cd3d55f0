"""A caller population: how simulated callers behave, read from a JSON file.

`lull corpus simulate` draws each call's caller from a population. Every field has a
default a designer can start from; where a figure comes from published work the field
says so, and where it is an assumption it says that instead, so nobody mistakes a
guess for a measurement. Times are milliseconds; durations are log-normal (response
times are right-skewed and never negative), given by their median and the sigma of
their logarithm.

Sources of the defaults:
- Turn-taking gaps in conversation have a mode near 200 ms across languages
  (Stivers et al., 2009, PNAS 106(26)); answering a question that needs no fetching
  is of that order plus the time to plan the answer, so a yes/no is about a second.
- Conversational English runs at about 150-200 words a minute (Yuan, Liberman and
  Cieri, 2006, "Towards an integrated understanding of speaking rate in
  conversation"): 360 ms a word is about 165 a minute.
- Finding a number on a card or a letter, how long a hold lasts, and how often
  callers hang up or fall silent are assumptions: there is no public corpus of
  no-input behaviour, which is what `lull sessions timing` over real journals is for.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

POPULATION_SCHEMA = 1


class PopulationError(ValueError):
    """A population file that cannot be used: one line, what and where."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Duration(_Strict):
    """A log-normal duration: half the callers take less than `median_ms`."""

    median_ms: float = Field(gt=0)
    sigma: float = Field(default=0.6, ge=0, le=3)  # spread of log(duration)

    def sample(self, rng: random.Random) -> float:
        if self.sigma == 0:
            return self.median_ms
        return math.exp(rng.gauss(math.log(self.median_ms), self.sigma))


Share = float  # 0..1, validated per field


class Population(_Strict):
    """Who calls: what they do after a question, and what goes wrong on the line."""

    schema_: int = Field(default=POPULATION_SCHEMA, alias="schema")
    name: str = "default"
    # the time from the observed end of a question to the caller's first speech, by
    # the kind of value asked for (assumptions, see the module docstring)
    answer_time: dict[str, Duration] = Field(
        default_factory=lambda: {
            "digits": Duration(median_ms=3500, sigma=0.8),  # often fetched: a card, a letter
            "number": Duration(median_ms=1800, sigma=0.6),  # decided, not fetched
            "yes_no": Duration(median_ms=900, sigma=0.5),  # Stivers et al. 2009 plus planning
            "text": Duration(median_ms=1500, sigma=0.6),
        }
    )
    # per question (the stage id), replacing the kind's distribution
    questions: dict[str, Duration] = {}
    # of callers about to answer, the share who first ask for time (a wait request),
    # and how long they are gone (assumption)
    asks_for_time: float = Field(default=0.15, ge=0, le=1)
    hold: Duration = Duration(median_ms=15000, sigma=0.7)
    # of those back from a hold, the share who announce it ("I'm back") before answering
    says_ready: float = Field(default=0.5, ge=0, le=1)
    # of callers giving a digits value, the share who give part, pause, then the rest
    partial_answer: float = Field(default=0.10, ge=0, le=1)
    partial_pause: Duration = Duration(median_ms=2500, sigma=0.6)
    # the share of answers the recogniser mishears (a digit changed: the caller then
    # says no at the confirmation)
    mishearing: float = Field(default=0.05, ge=0, le=1)
    # the share of first turns that are about something else ("what are your hours?")
    off_topic: float = Field(default=0.05, ge=0, le=1)
    # per question, the share of callers with a limit to their patience, and the limit:
    # not ready by then, they hang up
    hang_up: float = Field(default=0.03, ge=0, le=1)
    hang_up_after: Duration = Duration(median_ms=6000, sigma=0.8)
    # per call, the share of callers who never speak (muted, walked away)
    silent: float = Field(default=0.02, ge=0, le=1)
    # per call, the share with a media fault: the input path fails at a random moment
    # and, for `media_recovers` of them, comes back
    media_fault: float = Field(default=0.01, ge=0, le=1)
    media_recovers: float = Field(default=0.5, ge=0, le=1)
    media_outage: Duration = Duration(median_ms=3000, sigma=0.5)
    # tools: latency of every tool call, and the share that fail
    tool_latency: Duration = Duration(median_ms=600, sigma=0.5)
    tool_failure: float = Field(default=0.02, ge=0, le=1)
    # speech: the caller's speaking rate (Yuan et al. 2006) and the recogniser's delay
    # from the end of speech to the transcript
    ms_per_word: float = Field(default=360, gt=0)
    transcript_delay_ms: float = Field(default=300, ge=0)
    # the agent's voice: how long prompts take to start and to say (a virtual endpoint)
    prompt_start_ms: float = Field(default=150, ge=0)
    prompt_ms_per_word: float = Field(default=330, gt=0)

    def response(self, question: str, kind: str) -> Duration:
        if question in self.questions:
            return self.questions[question]
        return self.answer_time.get(kind) or self.answer_time.get("text") or Duration(median_ms=1500)


def load_population(path: Path | None) -> Population:
    """The population in `path` (JSON), or the defaults when None."""
    if path is None:
        return Population()
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise PopulationError(f"{path}: cannot read the population file: {e.strerror or e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise PopulationError(f"{path}: not JSON ({e}); expected a population object") from None
    if not isinstance(data, dict):
        raise PopulationError(f"{path}: expected a JSON object of population fields, got {type(data).__name__}")
    try:
        population = Population.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise PopulationError(f"{path}: {where}: {first['msg']}") from None
    if population.schema_ != POPULATION_SCHEMA:
        raise PopulationError(f"{path}: schema {population.schema_} is not supported; expected {POPULATION_SCHEMA}")
    return population


__all__ = ["Duration", "Population", "PopulationError", "load_population"]
