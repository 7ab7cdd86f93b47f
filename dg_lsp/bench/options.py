"""Option parsing shared by the benchmark command lines: argparse `type=` functions."""

from __future__ import annotations

import argparse
import json


def positive_ints(text: str) -> tuple[int, ...]:
    """`4,8,16` -> (4, 8, 16); an error unless all are positive integers."""
    try:
        values = tuple(int(v) for v in text.replace(" ", "").split(",") if v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def weight_or_off(text: str) -> float | None:
    """`0.5` -> 0.5; `off` (or `none`) -> None; an error for a negative or other value."""
    if text.strip().lower() in ("off", "none"):
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0 or off, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0 or off, got {text!r}")
    return value


def int_list(text: str) -> tuple[int, ...]:
    """`1,4` -> (1, 4), unchecked."""
    return tuple(int(v) for v in text.split(",") if v.strip())


def parse_setting(text: str) -> tuple[str, object]:
    """`KEY=VALUE` -> (key, value), the value parsed as JSON where it is JSON, else kept as text."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def subset_of(allowed: tuple[str, ...]):
    """A `type=` for a comma-separated, non-empty subset of `allowed`: `off,on` -> ("off", "on")."""
    def parse(text: str) -> tuple[str, ...]:
        values = tuple(v.strip() for v in text.split(",") if v.strip())
        bad = [v for v in values if v not in allowed]
        if bad or not values:
            raise argparse.ArgumentTypeError(f"expected a comma-separated subset of {','.join(allowed)}, got {text!r}")
        return values
    return parse
