"""`dg-lsp serve` with a scripted model answer, for end-to-end tests of post-processing.

    python tests/e2e/scripted_server.py ANSWERS.json serve --model DIR --device cpu

The real server, the real engine and the tiny model all run; only the text the model wrote is replaced, by
the first entry of ANSWERS.json (a list of [prefix_ending, generated_text]) whose prefix_ending the request's
prefix ends with. `generated_text` is what the model writes into the hole, the healing tail included (a healed
trailing space may be left out: the engine makes the first token start with it, so it is put back): it goes
through the engine's own `healing.unheal`, then the server's post-processing, as a real answer would; its
`generated_tokens` are the text's own tokens, and it is a finished answer: it ended inside its hole (a hole at
least one token longer) and was not cut short. A request no entry matches keeps the model's own answer.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from concurrent.futures import Future


def install(answers: list[tuple[str, str]]) -> None:
    from dg_lsp.engine import healing
    from dg_lsp.engine.engine import Engine

    original = Engine.submit

    def submit(self, request):
        inner = original(self, request)
        answer = next((text for ending, text in answers if request.prefix.endswith(ending)), None)
        if answer is None:
            return inner
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
            outer.set_result(dataclasses.replace(result, text=text or "", candidates=[], generated_tokens=tokens,
                                                 hole_length=max(result.hole_length, tokens + 1),
                                                 heal_mismatch=text is None, cut_short=False))

        inner.add_done_callback(done)
        return outer

    Engine.submit = submit


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        install([tuple(pair) for pair in json.load(f)])
    from dg_lsp.cli import main

    sys.argv = [sys.argv[0], *sys.argv[2:]]  # the process's own entry point, as `python -m dg_lsp` runs it
    raise SystemExit(main())
