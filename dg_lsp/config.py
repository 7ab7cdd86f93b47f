"""One configuration tree for the server, as frozen dataclasses.

Precedence: defaults < command line < initializationOptions < workspace configuration
(section `dgLsp`). Keys arrive in camelCase at the protocol boundary; invalid values are
reported once, logged, and replaced by the current value.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
from dataclasses import dataclass, fields
from typing import Any

log = logging.getLogger(__name__)

SECTION = "dgLsp"


@dataclass(frozen=True)
class Settings:
    model: str | None = None  # model directory; None = the embedded default model
    device: str = "auto"  # auto | cpu | cuda
    dtype: str = "auto"  # auto | float32 | bfloat16
    max_steps: int = 16
    temperature: float = 0.2
    entropy_bound: float = 0.1
    # AR-verified decoding (DenoiseParams.verify_weight): the model's base checks the decoder's drafts; None = off
    # (plain diffusion). 1.0 was chosen on the held-out repositories (docs/results/ar-verified.md); a model without
    # a base to check with (runner.verifies false: the small model, DiffusionGemma checkpoints) runs plain anyway
    verify_weight: float | None = 1.0
    # with verify_weight: a one-line answer is weighed against the lines the base model nearly wrote, at its first
    # this many hesitations, by the likelihood of the code after each (DenoiseParams.alternatives); 0 = off
    alternatives: int = 2
    # with verify_weight: the decoder's passes see a hole of this many slots until the answer nears its end, then the
    # whole hole (DenoiseParams.start_slots): a shorter canvas is a cheaper pass; 0 = the whole hole always
    start_slots: int = 16
    length_strategy: str = "auto"  # auto | pad | search
    prefix_tokens: int = 1024
    suffix_tokens: int = 256
    # time budget of one computation, from its start in the worker (prompt encoding included); None = no deadline.
    # 5 s: on a 2-core CPU without bfloat16, 93 of 100 HumanEval single-line fills finish within it; 1 s showed 16
    # (docs/results/deadline.md). A fill it cuts shows the lines it finished, else nothing
    deadline_ms: float | None = 5000.0
    automatic_trigger: bool = True  # answer automatic (as-you-type) requests
    max_lines: int = 8  # at most this many lines in one inline suggestion
    # an inline request answers up to this many items: the answer, then the other lines the engine weighed (the
    # suffix-scored alternatives), each finished and checked as the answer is; the editor cycles through them
    max_suggestions: int = 3
    # Python: a suggestion that reads a name nothing binds is cut before that line, or not shown, and such a selection
    # fill is no fill (completion/unbound.py); false shows them (a call to a function not yet written)
    name_check: bool = True
    max_document_chars: int = 20_000_000  # larger documents get no completions
    seed: int = 0
    trust_remote_code: bool = False  # command line only (--trust-remote-code), never from a client
    allow_pickle_weights: bool = False  # command line only (--allow-pickle-weights): also load pickled .bin weights
    prefix_cache: bool = True  # reuse a document's encoder cache where the next prompt agrees with it
    completion_cache: bool = True  # recent suggestions, typing-through, taking over in-flight computations
    debounce_ms: float = 0.0  # an automatic request waits this long for a newer one before it computes
    # documents waiting together share decoder forwards: 0 = automatic (when the engine measured at warm-up that
    # a shared forward is nearly free), 1 = never, N = up to N rows always
    batch_documents: int = 0
    # a shared engine (`dg-lsp engine serve`, docs/SCALE.md): http(s)://HOST:PORT; None = load the model here
    engine: str | None = None


# Settings a client can never set: they decide whether code from the model directory runs.
CLI_ONLY = frozenset({"trust_remote_code", "allow_pickle_weights"})

_CHOICES = {"device": ("auto", "cpu", "cuda"), "dtype": ("auto", "float32", "bfloat16", "float16", "int8"),
            "length_strategy": ("auto", "pad", "search")}
_RANGES = {"max_steps": (1, 256), "temperature": (0.0, 2.0), "entropy_bound": (1e-6, 100.0),
           "verify_weight": (0.0, 100.0), "alternatives": (0, 8), "start_slots": (0, 1024),
           "prefix_tokens": (16, 32768), "suffix_tokens": (0, 8192), "deadline_ms": (1.0, 600_000.0),
           "max_lines": (1, 200), "max_suggestions": (1, 8), "max_document_chars": (1, 10**9), "debounce_ms": (0.0, 2000.0),
           "batch_documents": (0, 64)}


def snake_case(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _coerce(name: str, ftype: str, value: Any) -> Any:
    if value is None and "None" in ftype:
        return None
    if "bool" in ftype:
        if isinstance(value, bool):
            return value
        raise ValueError("expected true or false")
    if "int" in ftype and "float" not in ftype:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value:
            raise ValueError("expected an integer")
        value = int(value)
    elif "float" in ftype:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError("expected a number")
        value = float(value)
    elif "str" in ftype:
        if not isinstance(value, str):
            raise ValueError("expected a string")
        if name in ("model", "engine") and not value.strip():
            return None
        if name == "engine" and not re.match(r"https?://[^/\s]+", value.strip()):
            raise ValueError("expected an http:// or https:// URL")
    if name in _CHOICES and value not in _CHOICES[name]:
        raise ValueError(f"expected one of {', '.join(_CHOICES[name])}")
    if name in _RANGES and value is not None:
        lo, hi = _RANGES[name]
        if not lo <= value <= hi:
            raise ValueError(f"expected a value in [{lo}, {hi}]")
    return value


def merge(base: Settings, raw: dict[str, Any] | None, from_client: bool = False) -> tuple[Settings, list[str]]:
    """Apply camelCase (or snake_case) keys over `base`. Returns the new settings and error messages.
    `from_client`: the keys come from an LSP client, which may not set the CLI_ONLY settings."""
    if not raw:
        return base, []
    if not isinstance(raw, dict):
        return base, [f"settings must be an object, got {type(raw).__name__}"]
    if isinstance(raw.get(SECTION), dict):  # accept {"dgLsp": {...}} as well as the bare section
        raw = raw[SECTION]
    types_ = {f.name: str(f.type) for f in fields(Settings)}
    changes, errors = {}, []
    for key, value in raw.items():
        name = snake_case(key)
        if name not in types_:
            errors.append(f"unknown setting {SECTION}.{key}")
            continue
        if from_client and name in CLI_ONLY:
            if value != getattr(base, name):
                errors.append(f"{SECTION}.{key} cannot be set by the editor (only by the dg-lsp command line); "
                              f"keeping {getattr(base, name)!r}")
            continue
        try:
            changes[name] = _coerce(name, types_[name], value)
        except ValueError as exc:
            errors.append(f"invalid setting {SECTION}.{key}={value!r}: {exc}; keeping {getattr(base, name)!r}")
    for err in errors:
        log.warning(err)
    return dataclasses.replace(base, **changes), errors


def engine_key(settings: Settings) -> tuple:
    """Settings that need a model reload when they change."""
    return (settings.model, settings.device, settings.dtype, settings.trust_remote_code,
            settings.allow_pickle_weights, settings.engine)


def camel_case(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def settings_json(settings: Settings) -> dict[str, Any]:
    return {camel_case(f.name): getattr(settings, f.name) for f in fields(Settings)}


def thread_count(asked: int | None) -> int:
    """torch threads: `--threads N`, else $DG_LSP_THREADS, else 1 (at least 1). ValueError for a variable that is
    not an integer (each CLI turns it into its one-line error)."""
    if asked is not None:
        return max(1, asked)
    value = os.environ.get("DG_LSP_THREADS", "1")
    try:
        return max(1, int(value))
    except ValueError:
        raise ValueError(f"$DG_LSP_THREADS must be an integer, got {value!r}") from None
