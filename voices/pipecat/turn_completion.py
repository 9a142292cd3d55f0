"""Pipecat's turn-completion markers beside Lull: the LLM reads the caller, Lull owns
the silence that follows.

With `FilterIncompleteUserTurnStrategies`, the pipeline's LLM starts every response with
a marker (● complete, ◐ cut off mid-thought, ○ needs more time), and `LullProcessor`
takes each as the model's decision for the caller turn it read. The mixin that reads the
markers also re-prompts on timers of its own after ◐ (5 s) and ○ (10 s): a second owner
of no-input, and exactly seed 001's failure (a model that decided to wait, then a
recovery timer that treats the silence as a failure). `lull_turn_completion()` hands
those timeouts to Lull: the mixin's config with both timeouts further off than any call
lasts, so they never fire, and Lull's ladder (the hold, its check-ins and budget after
○; the listening window after ◐) decides what the silence gets.

    strategies = FilterIncompleteUserTurnStrategies(config=lull_turn_completion())
    user_aggregator, assistant_aggregator = LLMContextAggregatorPair(
        context, user_params=LLMUserAggregatorParams(user_turn_strategies=strategies))

Markers, instructions and prompts of a config you pass are kept as they are.
"""

from __future__ import annotations

import dataclasses

from pipecat.turns.user_turn_completion_mixin import UserTurnCompletionConfig

# a day: longer than any call, so the mixin's incomplete-turn timers never fire in one
LULL_OWNS_NO_INPUT_S = 24 * 3600.0


def lull_turn_completion(config: UserTurnCompletionConfig | None = None) -> UserTurnCompletionConfig:
    """`config` (or the mixin's defaults) with its incomplete-turn timeouts handed to Lull."""
    return dataclasses.replace(config or UserTurnCompletionConfig(),
                               incomplete_short_timeout=LULL_OWNS_NO_INPUT_S,
                               incomplete_long_timeout=LULL_OWNS_NO_INPUT_S)


__all__ = ["LULL_OWNS_NO_INPUT_S", "lull_turn_completion"]
