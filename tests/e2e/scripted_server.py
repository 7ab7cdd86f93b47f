"""`dg-lsp serve` with a scripted model answer, for end-to-end tests of post-processing.

    python tests/e2e/scripted_server.py ANSWERS.json serve --model DIR --device cpu

The real server, the real engine and the tiny model all run; only the text the model wrote is replaced, by
the first entry of ANSWERS.json (a list of [prefix_ending, generated_text] or [prefix_ending, generated_text,
other_lines]) whose prefix_ending the request's
prefix ends with. `generated_text` is what the model writes into the hole, the healing tail included (a healed
trailing space may be left out: the engine makes the first token start with it, so it is put back): it goes
through the engine's own `healing.unheal`, then the server's post-processing, as a real answer would; its
`generated_tokens` are the text's own tokens, and it is a finished answer: it ended inside its hole (a hole at
least one token longer) and was not cut short. `other_lines` are the lines the engine weighed against the answer
(InfillResult.alternatives, as engine/alternatives.py reports them: the hole's text after the healing tail), scored
below the answer in their order. A request no entry matches keeps the model's own answer.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from concurrent.futures import Future


def install(answers: list[tuple]) -> None:
    from dg_lsp.engine import healing
    from dg_lsp.engine.engine import Engine

    original = Engine.submit

    def submit(self, request):
        inner = original(self, request)
        entry = next((entry for entry in answers if request.prefix.endswith(entry[0])), None)
        if entry is None:
            return inner
        answer, others = entry[1], (entry[2] if len(entry) > 2 else [])
        outer: Future = Future()

        def done(f: Future) -> None:
            try:
                result = f.result()
            except BaseException as exc:  # noqa: BLE001 - hand the engine's failure on as it is
                outer.set_exception(exc)
                return
            tail = healing.healing_tail(request.prefix) if request.heal else ""
            written = answer
            if healing.constrained(tail) and not written.startswith(tail):
                written = tail + written  # the engine keeps the first token to ones that start with the space
            text = healing.unheal(written, tail)
            # the scripted text's own tokens, as if the model wrote them (a fill of the whole canvas is refused)
            tokens = len(self.tokenize(answer))
            alternatives = [(text or "", 0.0)] + [(line, -1.0 - i) for i, line in enumerate(others)] if others else []
            outer.set_result(dataclasses.replace(result, text=text or "", candidates=[], generated_tokens=tokens,
                                                 hole_length=max(result.hole_length, tokens + 1),
                                                 heal_mismatch=text is None, cut_short=False,
                                                 alternatives=alternatives))

        inner.add_done_callback(done)
        return outer

    Engine.submit = submit


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        install([tuple(entry) for entry in json.load(f)])
    from dg_lsp.cli import main

    sys.argv = [sys.argv[0], *sys.argv[2:]]  # the process's own entry point, as `python -m dg_lsp` runs it
    raise SystemExit(main())
