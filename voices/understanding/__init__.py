"""Understanding callers: what a caller's turn means, read from its words.

The room of `voices` that reads what a caller said (the words a recogniser or a typed
turn gives); hearing them (VAD, STT, end of turn, echo, levels) stays beside it in
`voices/`. One line a module:

- `interpret`: the matchers a backend reads a turn with (`make_matcher`, kinds lexical,
  embedding, minilm, blend, classifier), loaded off the loop (`BackgroundMatcher`),
  and `read_turn`, which says what read it;
- `intent_classifier`: kind "classifier", softmax regression over sentence features
  trained on the flow's intents, Lull's shared phrases and an off-topic "none" class;
- `class_similarity`: how near a turn is to each class's own examples, features the
  classifier learns to trust beside the turn's;
- `yes_no_reader`: a yes or a no where the words hold no yes/no word ("please do",
  "aye", "know" heard for "no"), learned on the classifier's own features;
- `normalise`: a caller's words as the matchers read them (grunt spellings, leading
  discourse markers, bare clarifications, polarity);
- `embedders`: the sentence embedders matching runs on (wordllama, MiniLM, a blend);
- `sentence_encoder`: all-MiniLM-L6-v2 in numpy, offline and without torch;
- `disk_cache`: sentence vectors and trained classifiers kept on disk between runs;
- `caller_acts/`: phrasings of the shared acts written outside the team, learned beside
  a flow's own examples, answers to yes/no questions (`caller_acts/yes_no/`), and their
  MiniLM vectors, built once (`caller_acts/vectors.py`);
- `recogniser_context`: what whisper is told before it hears an answer (the question,
  the acts callers say between answers, the flow's routes), so it hears them better;
- `model_reading`: the agent's own model (Pipecat's markers, LiveKit's tools) as a
  second reader of a turn, and the journal record of both readings;
- `intent_bench`: `lull bench intents`, accuracy per intent on held-out phrasings;
- `phrasing_bench`: any flow measured on any phrasing file (`--phrasings`, yardsticks);
- `heard_phrasings`: the same phrasings spoken, over a line, and recognised (`--spoken`);
- `shape_ablation`: what each word shape adds, each turn read with and without it (`--shapes`).

The pure parts live in the ladder layer, which `ladder.flow.compile`, the runtime and
`sessions` import and which may not import `voices`: `ladder/flow/understanding/`
(`shared_intents` the phrases every flow shares, `caller_cues` word shapes, `route_words`
a route named by its own words, `text` slot parsers and the lexical matcher). Beside
them, `ladder/flow/route_roles.py` reads what each route is for from a designer's words;
a corpus's model readings are counted by `sessions/model_readings.py`.
"""
