"""Time-ordered identifiers: ``bel_`` + 12 hex digits of milliseconds + 16 random hex digits.

Time order keeps B-tree inserts local and makes ids sort the way events happened; the random
tail makes them unguessable enough that one session cannot address another's records by guessing.
"""

from __future__ import annotations

import os
import time

PREFIXES = frozenset(
    {
        "obs",
        "clm",
        "evi",
        "bel",
        "dec",
        "act",
        "out",
        "rev",
        "ses",
        "con",
        "grt",
        "rcl",
        "chn",
        "req",
        "alr",
    }
)


def new_id(prefix: str) -> str:
    """A fresh id such as ``bel_018f3a2b4c5d9e0f1a2b3c4d5e6f``."""
    assert prefix in PREFIXES, prefix
    return f"{prefix}_{time.time_ns() // 1_000_000:012x}{os.urandom(8).hex()}"


def id_prefix(ident: str) -> str:
    return ident.split("_", 1)[0]
