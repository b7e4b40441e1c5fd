"""Time-ordered identifiers: ``bel_`` + 12 hex digits of milliseconds + 16 random hex digits.

Time order keeps B-tree inserts local and makes ids sort the way events happened; the random
tail makes them unguessable enough that one session cannot address another's records by guessing.
"""

from __future__ import annotations

import os
import time

from gnomon.firewall.model.errors import InputError

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
        "erq",
    }
)


class UnknownPrefixError(InputError):
    """An id was asked for with a prefix that is not one of :data:`PREFIXES`."""


def checked_prefix(prefix: object) -> str:
    """``prefix`` if it is one of :data:`PREFIXES`, else :class:`UnknownPrefixError` (a check
    that holds under ``python -O``, unlike an ``assert``).

    >>> try:
    ...     checked_prefix("nope")
    ... except UnknownPrefixError as exc:
    ...     print(exc.message)
    unknown id prefix 'nope'
    """
    if not isinstance(prefix, str) or prefix not in PREFIXES:
        raise UnknownPrefixError(
            f"unknown id prefix {prefix!r}", hint=f"use one of {', '.join(sorted(PREFIXES))}"
        )
    return prefix


def new_id(prefix: str) -> str:
    """A fresh id such as ``bel_018f3a2b4c5d9e0f1a2b3c4d5e6f``."""
    checked_prefix(prefix)
    return f"{prefix}_{time.time_ns() // 1_000_000:012x}{os.urandom(8).hex()}"


def new_ids(prefix: str, count: int) -> list[str]:
    """``count`` fresh ids with one clock read and one ``os.urandom`` call (a batch's ids):
    the same form and the same 64 random bits each as :func:`new_id`.

    >>> a, b = new_ids("bel", 2)
    >>> a[:16] == b[:16] and a != b and len(a) == len(new_id("bel"))
    True
    """
    checked_prefix(prefix)
    head = f"{prefix}_{time.time_ns() // 1_000_000:012x}"
    tail = os.urandom(8 * count).hex()
    return [head + tail[i : i + 16] for i in range(0, 16 * count, 16)]


def id_prefix(ident: str) -> str:
    return ident.split("_", 1)[0]
