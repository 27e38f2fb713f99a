"""Numbers typed by users (command line, pytest options and ini, environment): one set of rules.

ASCII digits only ("²".isdigit() is True and int("٣") is 3 in Python), at most 18 digits (so a
value fits 64 bits and int() never meets its 4300-digit limit), no underscores, no nan or inf.
Each parser returns the value or raises `ValueError` with one line saying what to use; callers
turn it into their own kind of usage error (argparse, pytest.UsageError, HarnessError).
"""

from __future__ import annotations

import math
import re

_WHOLE = re.compile(r"-?[0-9]{1,18}")
_DECIMAL = re.compile(r"([0-9]{1,18}\.?[0-9]{0,18}|\.[0-9]{1,18})([eE][-+]?[0-9]{1,3})?")


def whole(text: str) -> int:
    """A whole number, possibly negative."""
    if not isinstance(text, str) or not _WHOLE.fullmatch(text.strip()):
        raise ValueError(f"invalid value {text!r}: use a whole number")
    return int(text.strip())


def count(text: str, least: int = 0, most: int | None = None) -> int:
    """A whole number in least..most."""
    fix = "use a whole number " + (f"from {least} to {most:,}" if most is not None else f"{least} or more")
    try:
        value = whole(text)
    except ValueError:
        raise ValueError(f"invalid value {text!r}: {fix}") from None
    if value < least or (most is not None and value > most):
        raise ValueError(f"invalid value {text!r}: {fix}")
    return value


def seconds(text: str) -> float:
    """A positive, finite number of seconds (no sign, no nan or inf)."""
    if not isinstance(text, str) or not _DECIMAL.fullmatch(text.strip()):
        raise ValueError(f"invalid value {text!r}: use a positive number of seconds")
    value = float(text.strip())
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"invalid value {text!r}: use a positive number of seconds")
    return value
