"""The pure parts of understanding callers: words in, intents and values out.

No model, no I/O; what the flow compiler, the runtime, `sessions` and the voices'
matchers (`voices/understanding/`, the room's other half) share:

- `shared_intents`: the intents every flow shares, Lull's own phrases for them, and
  `flow_intents(spec)`, what a matcher learns for a flow;
- `caller_cues`: shapes of words that say what a caller wants more surely than any
  example, read where the classifier is unsure;
- `route_words`: the words that name what each route offers, so a caller who names it
  asks for it;
- `text`: slot parsers (digits, yes or no, a number, free text), answer progress,
  digit masking, verbatim similarity and the lexical intent matcher.
"""
