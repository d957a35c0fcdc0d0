"""summary.json: the machine-readable verdict, with fixed keys (see docs/DESIGN.md).

Byte-for-byte deterministic for one summary: keys in the caller's order, floats as Python
``repr``, two-space indent, one trailing newline. NaN never reaches the file: a NaN value is
written as null ("no sample"), an infinity is refused.
"""

from __future__ import annotations

import json
import math
from typing import Any, Mapping

REQUIRED_KEYS: tuple[str, ...] = ("scenario", "seed", "invariants", "slo", "counts")


def check_summary(summary: Mapping[str, Any]) -> None:
    """Raise ValueError unless ``summary`` has the fixed top-level keys, each invariant has
    ``holds``/``violations``/``example`` and each SLO figure ``value``/``threshold``/``met``."""
    missing = [key for key in REQUIRED_KEYS if key not in summary]
    if missing:
        raise ValueError(f"summary lacks {missing}; expected keys {list(REQUIRED_KEYS)}")
    for name, inv in summary["invariants"].items():
        lacking = {"holds", "violations", "example"} - set(inv)
        if lacking:
            raise ValueError(f"summary invariant {name!r} lacks {sorted(lacking)}")
    for name, slo in summary["slo"].items():
        lacking = {"value", "threshold", "met"} - set(slo)
        if lacking:
            raise ValueError(f"summary SLO figure {name!r} lacks {sorted(lacking)}")


def render_summary_json(summary: Mapping[str, Any]) -> str:
    """The text of summary.json. Raises ValueError for a malformed summary (see
    ``check_summary``), an infinite float, or a value JSON cannot hold."""
    check_summary(summary)
    try:
        text = json.dumps(_plain(summary), indent=2, sort_keys=False, allow_nan=False)
    except TypeError as exc:
        raise ValueError(f"summary holds a value JSON cannot hold: {exc}") from None
    return text + "\n"


def _plain(value: Any) -> Any:
    """Numpy scalars to Python ones, tuples to lists, NaN to None; infinities raise."""
    if hasattr(value, "item") and type(value).__module__ == "numpy":
        value = value.item()
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            raise ValueError(f"summary holds an infinite float {value!r}")
        return float(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
