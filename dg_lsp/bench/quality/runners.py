"""Runners: produce one completion per task through the engine (diffusion, autoregressive) or not at all.

Every runner returns a `TaskEdit`: an edit of the document the editor would hold
(`prefix + suffix`, the hole removed) plus timings, scored as that edit applied to the document.
The LSP runner (`lsp_runner.py`) returns the server's item: its `insertText` over its `range`.
The diffusion engine runner (and the oracle-length diagnostic) returns what the server would send for
the same request: the prompt windows the server builds (`extract_context`), the
engine's answer through the server's own post-processing and syntax gate
(`completion.postprocess.finish_suggestion`), inserted at the cursor. Nothing is re-added for the task's
kind: a line that loses its line break is scored as the editor would get it. The AR and no-suffix
baselines are continuations, not the server's path: they are shaped by the task's kind
(`shape_continuation`).
"""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass, field

from dg_lsp.bench.quality.tasks import Task
from dg_lsp.config import Settings

SERVER_DEFAULTS = Settings()  # the server's settings where the bench has no knob of its own

LINE_KINDS = ("line-rest", "single-line")


@dataclass(frozen=True)
class RunSettings:
    """The knobs of one benchmark configuration (one value of --steps)."""

    steps: int = 16
    temperature: float = 0.0
    entropy_bound: float = 0.1
    verify_weight: float | None = SERVER_DEFAULTS.verify_weight  # DenoiseParams.verify_weight; None: off
    alternatives: int = SERVER_DEFAULTS.alternatives  # DenoiseParams.alternatives; 0: off
    start_slots: int = SERVER_DEFAULTS.start_slots  # DenoiseParams.start_slots; 0: the whole hole
    length_strategy: str = "auto"  # auto | pad | search
    hole_lengths: tuple[int, ...] = (4, 8, 16, 32)
    canvas: int | None = None  # pad-fill hole length; None: the model's canvas_length
    max_prompt_tokens: int = 1024
    max_new_tokens: int = 64  # autoregressive baseline
    seed: int = 0
    heal: bool = True  # token healing of prefixes that end at a line break (Engine.healing_tail), every mode


@dataclass
class TaskEdit:
    """A runner's answer to a task: an edit of the task's document in character offsets, with its figures."""

    text: str
    start: int  # the edit replaces document[start:end], document = prefix + suffix
    end: int
    latency_ms: float
    timings_ms: dict[str, float] = field(default_factory=dict)
    steps: int | None = None
    tokens_per_forward: float | None = None
    generated_tokens: int | None = None
    error: str | None = None
    others: tuple = ()  # the other items of the answer (an explicit request's, --via lsp), as TaskEdits


def insertion(task: Task, text: str, latency_ms: float, **kw) -> TaskEdit:
    return TaskEdit(text, len(task.prefix), len(task.prefix), latency_ms, **kw)


@dataclass(frozen=True)
class EditorView:
    prefix: str  # the prompt's prefix as the server builds it (from a stable anchor)
    ctx: object  # dg_lsp.context.CodeContext at the hole


def editor_view(task: Task, prefix_tokens: int) -> EditorView:
    """The context the server extracts for a cursor at the task's hole in `prefix + suffix`."""
    from dg_lsp.context import extract_context

    doc = task.prefix + task.suffix
    line = task.prefix.count("\n")
    column = len(task.prefix) - (task.prefix.rfind("\n") + 1)
    ctx = extract_context(doc, task.language, line, column, prefix_budget=prefix_tokens,
                          suffix_budget=SERVER_DEFAULTS.suffix_tokens)
    return EditorView(ctx.prefix, ctx)


def cut_at_block_end(text: str, first_indent: int | None = None) -> str:
    """Keep the lines of a continuation up to the first non-blank line indented less than its first line."""
    lines = text.splitlines(keepends=True)
    kept: list[str] = []
    for line in lines:
        if line.strip():
            indent = len(line) - len(line.lstrip())
            if first_indent is None:
                first_indent = indent
            elif indent < first_indent:
                break
        kept.append(line)
    return "".join(kept)


def shape_continuation(task: Task, text: str) -> str:
    """Turn a left-to-right continuation into a hole filling for the task's kind (AR baseline only).

    Line kinds stop at the end of the line (single-line keeps the newline, line-rest drops it);
    multi-line kinds stop where the block the hole starts in ends.
    """
    if task.kind in LINE_KINDS:
        line = text.split("\n", 1)[0]
        return line + "\n" if task.kind == "single-line" else line
    last_line = task.prefix.rsplit("\n", 1)[-1]
    if last_line.strip():  # the hole starts mid-line: the block is the one of that line
        return cut_at_block_end(last_line + text, len(last_line) - len(last_line.lstrip()))[len(last_line):]
    return cut_at_block_end(text)


def peak_memory(device: str | None) -> dict:
    """Peak memory so far: CUDA allocator peak on a GPU, else the harness process's peak RSS."""
    if device and str(device).startswith("cuda"):
        import torch

        return {"mb": torch.cuda.max_memory_allocated() / 2**20, "kind": "cuda_max_allocated"}
    return {"mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, "kind": "process_max_rss"}


class EngineRunner:
    """Diffusion infill through `Engine.infill`, the engine called directly."""

    mode, via = "diffusion", "engine"

    def __init__(self, engine, settings: RunSettings):
        from dg_lsp.engine import DenoiseParams

        self.engine, self.settings = engine, settings
        self._view: tuple[Task, EditorView] | None = None
        self.params = DenoiseParams(max_steps=settings.steps, temperature=settings.temperature,
                                    entropy_bound=settings.entropy_bound, seed=settings.seed,
                                    verify_weight=settings.verify_weight, alternatives=settings.alternatives,
                                    start_slots=settings.start_slots)
        if settings.canvas:
            # The pad-fill hole is the model's canvas length; the engine exposes no per-request knob.
            engine.runner.canvas_length = settings.canvas
        _reset_cuda_peak(engine)

    def view(self, task: Task) -> EditorView | None:
        """The server's context for the task (computed once per task)."""
        if not self.editor_view:
            return None
        if self._view is None or self._view[0] is not task:
            self._view = (task, editor_view(task, self.settings.max_prompt_tokens))
        return self._view[1]

    def request(self, task: Task):
        from dg_lsp.completion.postprocess import shown_end
        from dg_lsp.context.names import free_names
        from dg_lsp.engine import InfillRequest

        s = self.settings
        prefix, suffix = task.prefix, task.suffix if self.use_suffix else ""
        view = self.view(task)
        if view is not None:
            prefix, suffix = view.prefix, view.ctx.suffix
        # where the shown text ends, as the server asks (CompletionService._start; `shape` is an invoked request)
        ends = shown_end(view.ctx, False, SERVER_DEFAULTS.max_lines) if view is not None else {}
        names = free_names(prefix, suffix, view.ctx.language) if view is not None else ()
        # every task is a fresh document: no prefix cache carried over from the task before (which often shares the
        # prompt's start), as the AR baseline encodes afresh; `dg-lsp bench typing` measures the prefix cache
        return InfillRequest(prefix=prefix, suffix=suffix, params=self.params, length_strategy=s.length_strategy,
                             hole_lengths=s.hole_lengths, max_prompt_tokens=s.max_prompt_tokens,
                             use_suffix=self.use_suffix, heal=s.heal, reuse_prefix=False, free_names=names, **ends)

    def complete(self, task: Task) -> TaskEdit:
        request = self.request(task)
        t0 = time.perf_counter()
        result = self.engine.infill(request)
        text = self.shape(task, result)
        latency = (time.perf_counter() - t0) * 1000.0
        return insertion(task, text, latency, timings_ms=dict(result.timings_ms),
                         steps=result.steps, tokens_per_forward=result.tokens_per_forward,
                         generated_tokens=result.generated_tokens)

    use_suffix = True
    editor_view = True  # the server's windows and post-processing (see the module's docstring)

    def shape(self, task: Task, result) -> str:
        """What the server sends for this answer (an invoked request: the bench's LSP runner invokes too)."""
        from dg_lsp.completion.postprocess import finish_suggestion

        view = self.view(task)
        return finish_suggestion(result.text, result.candidates, view.prefix, view.ctx,
                                 selection=False, max_lines=SERVER_DEFAULTS.max_lines,
                                 document=task.prefix + task.suffix)

    def peak_memory(self) -> dict:
        return peak_memory(self.engine.loaded.device)

    def close(self) -> None:
        pass  # the engine is shared between runners; the caller closes it


class AutoregressiveRunner(EngineRunner):
    """The same weights' encoder decoding greedily on the prefix alone (`--baseline ar`)."""

    mode = "ar"
    head = "full"  # the base model's whole output head: the unchanged Gemma (engine/autoregressive.py)

    def complete(self, task: Task) -> TaskEdit:
        s = self.settings
        t0 = time.perf_counter()
        result = self.engine.autoregressive(task.prefix, max_new_tokens=s.max_new_tokens,
                                            stop_at_newline=task.kind in LINE_KINDS,
                                            max_prompt_tokens=s.max_prompt_tokens, heal=s.heal, head=self.head)
        latency = (time.perf_counter() - t0) * 1000.0
        return insertion(task, shape_continuation(task, result.text), latency, timings_ms=dict(result.timings_ms),
                         steps=result.steps, tokens_per_forward=result.tokens_per_forward,
                         generated_tokens=result.generated_tokens)


class RestrictedARRunner(AutoregressiveRunner):
    """`--baseline ar-restricted`: the AR twin reading the restricted output columns diffusion writes with, the
    same weights and head as the walk: the speed reference that leaves the head out of the comparison."""

    mode = "ar-restricted"
    head = "restricted"


class NoSuffixRunner(EngineRunner):
    """Diffusion with no suffix at all (`--baseline nosuffix`): a continuation canvas, shaped like AR output."""

    mode = "nosuffix"
    use_suffix = False
    editor_view = False

    def shape(self, task: Task, result) -> str:
        from dg_lsp.completion.postprocess import strip_control

        return shape_continuation(task, strip_control(result.text))


class OracleLengthRunner(EngineRunner):
    """Diagnostic (`--baseline oracle-length`), not a product setting: diffusion with the suffix pinned and the
    hole's length in tokens taken from the reference answer (the rest of the hole pinned as pads), so the model
    chooses only the content. Set against plain diffusion it separates "wrong length" (blank or cut answers)
    from "wrong tokens"."""

    mode = "oracle-length"

    def request(self, task: Task):
        import dataclasses

        request = super().request(task)
        # with token healing the hole also holds the prefix's tail and the part of the next line's indentation
        # that the pinned suffix head leaves out (Engine.hole_text)
        text = self.engine.hole_text(task.prefix, task.middle, task.suffix, heal=request.heal)
        return dataclasses.replace(request, length_strategy="pad", hole_tokens=max(1, len(self.engine.tokenize(text))))


class EmptyRunner:
    """The empty completion (`--baseline empty`): the floor that tests which never need the hole pass."""

    mode, via = "empty", "none"

    def complete(self, task: Task) -> TaskEdit:
        return insertion(task, "", 0.0)

    def peak_memory(self) -> dict:
        return {"mb": None, "kind": None}

    def close(self) -> None:
        pass


def _reset_cuda_peak(engine) -> None:
    if str(engine.loaded.device).startswith("cuda"):
        import torch

        torch.cuda.reset_peak_memory_stats()
