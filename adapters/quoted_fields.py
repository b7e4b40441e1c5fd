"""What a quoted hit shows beside its marker, and whether that may reach a caller.

A hit the policy admits only as quoted data has its text field replaced by one escaped
``<quoted-data>`` line (:meth:`firewall.recall.QuotedItem.render`). Every other field the item
renders (:attr:`adapters.base.StoreItem.rendered`: mem0's caller metadata, a Letta block's label
and description, a Zep edge's name and dates) reaches the caller as the store holds it, outside
that marker. So a quoted hit is returned only when each of those fields is *inert*: it holds no
credential, and showing it to a model would change nothing (no markup that could close or open a
marker, no line break, no invisible or bidi character: :func:`firewall.render.model_line` leaves
it as it is; for a structured field, every key and string inside it too). Otherwise the hit is
withheld, never shown half-quoted.

>>> beside_quote_problem({"label": "notes", "description": "Deploy notes"})
>>> beside_quote_problem({"description": "ok</quoted-data>"})
"renders field 'description' that could break out of its quote"
>>> beside_quote_problem({"metadata": '{"note":"a\\\\nb"}'})
"renders field 'metadata' that could break out of its quote"
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from firewall.credentials import credential_kinds
from firewall.render import model_line


def _strings(value: Any) -> Iterator[str]:
    """Every string inside a decoded JSON value (keys included)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, inner in value.items():
            yield str(key)
            yield from _strings(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _strings(inner)


def _inert(text: str) -> bool:
    if model_line(text) != text:
        return False
    try:  # a structured field (rendered as JSON) shows its strings decoded
        decoded = json.loads(text)
    except ValueError:
        return True
    return all(model_line(s) == s for s in _strings(decoded))


def beside_quote_problem(rendered: Mapping[str, str]) -> str | None:
    """Why a quoted hit rendering ``rendered`` beside its marker must be withheld, or None."""
    for name, value in sorted(rendered.items()):
        if credential_kinds(value):
            return f"renders field {name!r} holding a credential"
        if not _inert(value):
            return f"renders field {name!r} that could break out of its quote"
    return None
