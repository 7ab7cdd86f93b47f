"""The engine's HTTP/JSON API: paths, headers, and the codec of InfillRequest and InfillResult.

Both sides use this module: `dg-lsp engine serve` (dg_lsp/remote/app.py) and the thin client
(`RemoteEngine`, dg_lsp/remote/client.py). It imports neither ray nor an HTTP library.

    POST /v1/infill    {"id": str, "request": InfillRequest}  -> {"result": InfillResult, "replica", "server_ms"}
    POST /v1/cancel    {"id": str}                             -> {"cancelled": bool, "replica"}
    POST /v1/tokenize  {"text": str}                           -> {"ids": [int]}
    GET  /v1/status                                            -> the replica's engine status, spec, counters
    GET  /v1/health                                            -> {"ok": true, "replica"}

Every request carries `Authorization: Bearer <token>` (the shared token: `engine serve --token`, or
$DG_LSP_ENGINE_TOKEN on both sides); without it, or with a wrong one, the answer is 401. A document's
requests carry `serve_multiplexed_model_id: <affinity key>` so the router sends them to the replica that
holds the document's prefix KV cache (dg_lsp/remote/router.py).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import MISSING, asdict, fields

from dg_lsp.engine.types import DenoiseParams, InfillRequest, InfillResult

API = "/v1"
TOKEN_ENV = "DG_LSP_ENGINE_TOKEN"
AFFINITY_HEADER = "serve_multiplexed_model_id"  # Ray Serve reads it into the request's routing metadata
MAX_BODY_BYTES = 8 * 1024 * 1024
MAX_TEXT_CHARS = 2_000_000
_LOCAL_FIELDS = ("cancel", "started_at")  # an InfillRequest's process-local fields, never sent

# field -> (accepted JSON types, allowed range or choices); None in the types: may be null
_REQUEST_FIELDS = {
    "prefix": ((str,), None),
    "suffix": ((str,), None),
    "length_strategy": ((str,), ("auto", "pad", "search")),
    "hole_lengths": ((list,), (1, 512)),
    "max_prompt_tokens": ((int,), (1, 1 << 20)),
    "use_suffix": ((bool,), None),
    "doc_key": ((str, type(None)), None),
    "reuse_prefix": ((bool,), None),
    "heal": ((bool,), None),
    "heal_retry": ((bool,), None),
    "batch_rows": ((int,), (0, 64)),
    "hole_tokens": ((int, type(None)), (0, 512)),
    "hole_slots": ((int, type(None)), (1, 4096)),
    "line_only": ((bool,), None),
    "block_indent": ((int, type(None)), (0, 4096)),
    "block_lines": ((int, type(None)), (1, 100_000)),
    "rest_of_line": ((bool,), None),
    "one_statement": ((bool,), None),
    "free_names": ((list,), "names"),
}
_PARAM_FIELDS = {
    "max_steps": ((int,), (1, 1024)),
    "temperature": ((int, float), (0.0, 10.0)),
    "t_min_ratio": ((int, float), (0.0, 1.0)),
    "entropy_bound": ((int, float), (0.0, 1000.0)),
    "stability_threshold": ((int,), (0, 1024)),
    "settle_steps": ((int,), (1, 1024)),
    "confidence_threshold": ((int, float), (0.0, 1000.0)),
    "seed": ((int,), (-(1 << 63), (1 << 63) - 1)),
    "deadline_ms": ((int, float, type(None)), (0.0, 3_600_000.0)),
    "reference_sampling": ((bool,), None),
    "verify_weight": ((int, float, type(None)), (0.0, 100.0)),
    "alternatives": ((int,), (0, 8)),
    "start_slots": ((int, type(None)), (0, 1024)),
}


class WireError(ValueError):
    """A request body the engine refuses (answered 400 with this message)."""


def token_from_env() -> str | None:
    value = os.environ.get(TOKEN_ENV, "").strip()
    return value or None


def affinity_key(client_id: str, doc_key: str | None) -> str:
    """The routing key of a document: the same for all of its requests, different across users."""
    return hashlib.sha256(f"{client_id}\0{doc_key or ''}".encode()).hexdigest()[:24]


def rank_replicas(key: str, replica_ids: list[str]) -> list[str]:
    """Replica ids in rendezvous-hash order for a document's affinity key (its own replica first): every router
    ranks them alike, and a replica that joins or leaves moves only the documents that rank it first."""
    return sorted(replica_ids, key=lambda rid: hashlib.blake2b(f"{key}|{rid}".encode(), digest_size=8).digest(),
                  reverse=True)


def request_to_json(request: InfillRequest) -> dict:
    out = {}
    for f in fields(InfillRequest):
        if f.name in _LOCAL_FIELDS or (f.name == "free_names" and not request.free_names):
            continue  # no names: not sent, so an engine from before the field still takes the request
        value = getattr(request, f.name)
        if f.name == "params":
            value = asdict(value)
        elif f.name in ("hole_lengths", "free_names"):
            value = list(value)
        out[f.name] = value
    return out


def _check(name: str, value, spec) -> object:
    types_, bounds = spec
    if isinstance(value, bool) and bool not in types_:
        raise WireError(f"{name}: expected {types_[0].__name__}, got a boolean")
    if not isinstance(value, types_):
        raise WireError(f"{name}: expected {' or '.join(t.__name__ for t in types_ if t is not type(None))}"
                        f"{' or null' if type(None) in types_ else ''}, got {type(value).__name__}")
    if bounds == "names":
        if len(value) > 8 or not all(isinstance(v, str) and v.isidentifier() and len(v) <= 64 for v in value):
            raise WireError(f"{name}: expected at most 8 identifiers of at most 64 characters")
        return tuple(value)
    if value is None or bounds is None:
        if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
            raise WireError(f"{name}: longer than {MAX_TEXT_CHARS} characters")
        return value
    if isinstance(bounds[0], str):
        if value not in bounds:
            raise WireError(f"{name}: expected one of {', '.join(bounds)}, got {value!r}")
        return value
    lo, hi = bounds
    if isinstance(value, list):
        if not value or len(value) > 16 or not all(isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi
                                                   for v in value):
            raise WireError(f"{name}: expected 1-16 integers in [{lo}, {hi}]")
        return tuple(value)
    if not lo <= value <= hi:
        raise WireError(f"{name}: expected a value in [{lo}, {hi}], got {value!r}")
    return value


def _inferred(f) -> tuple:
    """The check of a field this module has no entry for (one added to the engine's types since): JSON of its
    default's type, or for a None default a number, a string or null."""
    default = f.default if f.default is not MISSING else (f.default_factory() if f.default_factory is not MISSING
                                                          else None)
    if default is None:
        return ((int, float, str, type(None)), None)
    if isinstance(default, tuple):
        return ((list,), (0, 1 << 20))
    if isinstance(default, float):
        return ((int, float), None)
    return ((type(default),), None)


def _checked(cls, data: dict, table: dict, where: str, skip: tuple = ()) -> dict:
    known = {f.name: f for f in fields(cls) if f.name not in skip}
    unknown = set(data) - set(known)
    if unknown:
        raise WireError(f"{where}: unknown fields {', '.join(sorted(unknown))}")
    out = {}
    for name, value in data.items():
        f = known[name]
        spec = table.get(name) or _inferred(f)
        value = _check(f"{where}.{name}" if where != "request" else name, value, spec)
        if spec[0] and float in spec[0] and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        out[name] = value
    return out


def request_from_json(data) -> InfillRequest:
    """An InfillRequest from its JSON; WireError naming the first bad field."""
    if not isinstance(data, dict):
        raise WireError("request: expected an object")
    if "prefix" not in data:
        raise WireError("request: prefix is required")
    params = data.get("params", {})
    if not isinstance(params, dict):
        raise WireError("params: expected an object")
    kwargs = _checked(InfillRequest, {k: v for k, v in data.items() if k != "params"}, _REQUEST_FIELDS, "request",
                      skip=_LOCAL_FIELDS + ("params",))
    return InfillRequest(params=DenoiseParams(**_checked(DenoiseParams, params, _PARAM_FIELDS, "params")), **kwargs)


def result_to_json(result: InfillResult) -> dict:
    out = asdict(result)
    out["candidates"] = [list(c) for c in result.candidates]
    return out


def result_from_json(data: dict) -> InfillResult:
    known = {f.name for f in fields(InfillResult)}
    kwargs = {k: v for k, v in data.items() if k in known}  # a newer engine may send more
    kwargs["candidates"] = [tuple(c) for c in kwargs.get("candidates", [])]
    # (line, score) pairs; anything else from a newer or broken engine is dropped, not raised on later
    kwargs["alternatives"] = [(a[0], float(a[1])) for a in kwargs.get("alternatives", []) or []
                              if isinstance(a, (list, tuple)) and len(a) == 2 and isinstance(a[0], str)
                              and isinstance(a[1], (int, float)) and not isinstance(a[1], bool)]
    kwargs["timings_ms"] = dict(kwargs.get("timings_ms", {}))
    return InfillResult(**kwargs)


READY = "ready at"  # `dg-lsp engine serve` prints one stdout line with this once its application is ready


def read_ready(stdout) -> tuple[str, list[str]]:
    """Read `dg-lsp engine serve`'s stdout up to its ready line: (that line, or "" at end of file where it exited
    first; the lines before it). Ray may print its own lines there first (a `(raylet)` warning on a busy machine)."""
    before = []
    for line in iter(stdout.readline, ""):
        if READY in line:
            return line, before
        before.append(line)
    return "", before
