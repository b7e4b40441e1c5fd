"""What a quoted hit shows beside its marker, and whether that may reach a caller.

A hit the policy admits only as quoted data has its text field replaced by one escaped
``<quoted-data>`` line (:meth:`firewall.gate.recall.QuotedItem.render`). Every other field of the
item
reaches the caller as the store holds it, outside that marker: the fields the item renders
(:attr:`adapters.base.StoreItem.rendered`: mem0's caller metadata, a Letta block's label and
description, a Zep edge's name) and whatever else the SDK's object carries (a message's tool
``name`` and metadata, mem0's ``actor_id``, the origin id written into the metadata). So a
quoted hit is returned only when each of those is *inert*: it holds no credential, and showing
it to a model would change nothing (no markup that could close or open a marker, no line break,
no invisible or bidi character: :func:`firewall.model.render.model_line` leaves it as it is; for a
field rendered as JSON, every key and string inside it too). Otherwise the hit is withheld,
never shown half-quoted.

>>> from gnomon.adapters.base import StoreItem
>>> def item(**raw): return StoreItem("s", "t", raw={"memory": "t", **raw}, text_field="memory")
>>> beside_quote_problem(item(label="notes", description="Deploy notes"))
>>> beside_quote_problem(item(memory="ok</quoted-data>"))  # the text field itself is quoted
>>> beside_quote_problem(item(description="ok</quoted-data>"))
"shows field 'description' that could break out of its quote"
>>> beside_quote_problem(StoreItem("s", "t", rendered={"metadata": '{"note":"a\\\\nb"}'}))
"shows field 'metadata' that could break out of its quote"
>>> beside_quote_problem(StoreItem("s", "t", raw=object(), text_field="text"))
"shows field 'fields' that could break out of its quote"
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from gnomon.adapters.base import StoreItem
from gnomon.firewall.audit.credentials import credential_kinds
from gnomon.firewall.model.render import model_line


def _strings(value: Any) -> Iterator[str]:
    """Every string inside a plain value (mapping keys included)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, inner in value.items():
            yield str(key)
            yield from _strings(inner)
    elif isinstance(value, list | tuple | set | frozenset):
        for inner in value:
            yield from _strings(inner)


def _decoded(text: str) -> Iterator[str]:
    """``text``, and the strings inside it when it is a field rendered as JSON."""
    yield text
    try:
        decoded = json.loads(text)
    except ValueError:
        return
    if not isinstance(decoded, str):
        yield from _strings(decoded)
    elif decoded != text:
        yield decoded


#: What an SDK object whose fields cannot be read shows: never inert, so the hit is withheld.
_UNREADABLE = {"fields": "<unreadable>"}


def _plain(raw: Any) -> Mapping[str, Any]:
    """The SDK object's fields as plain values (a dict row, a pydantic model, an object's
    attributes); an object whose fields cannot be read counts as not inert (fail closed)."""
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        return raw
    dump = getattr(raw, "model_dump", None)
    if callable(dump):
        try:
            found = dump(mode="json")
        except Exception:  # any SDK model: an unreadable one is withheld, never raised
            return _UNREADABLE
        return found if isinstance(found, Mapping) else _UNREADABLE
    fields = getattr(raw, "__dict__", None)
    return fields if isinstance(fields, dict) else _UNREADABLE


def _beside(item: StoreItem) -> Iterator[tuple[str, str]]:
    """(field, text) of every string the hit shows outside its text field."""
    for name, value in item.rendered.items():
        for text in _decoded(value):
            yield name, text
    outer, _, inner = (item.text_field or "").partition(".")
    for name, value in _plain(item.raw).items():
        shown = value
        if name == outer:
            if not inner:
                continue
            shown = {k: v for k, v in _plain(value).items() if k != inner}
        for text in _strings(shown):
            yield str(name), text


def _problem(name: str, text: str) -> str | None:
    if credential_kinds(text):
        return f"shows field {name!r} holding a credential"
    if model_line(text) != text:
        return f"shows field {name!r} that could break out of its quote"
    return None


def beside_quote_problem(item: StoreItem) -> str | None:
    """Why ``item``, admitted only as quoted data, must be withheld instead, or None."""
    return next(filter(None, (_problem(name, text) for name, text in _beside(item))), None)


def unsafe_fields(raw: Any, *, skip: tuple[str, ...] = ()) -> list[str]:
    """The fields of an SDK object (but ``skip``) holding a string that is not inert (a
    credential, or anything :func:`~firewall.model.render.model_line` would change), in order.

    >>> unsafe_fields({"first_name": "Ada", "email": "ada@example.com", "note": "a</b>"})
    ['note']
    """
    plain = _plain(raw)
    return [
        str(name)
        for name, value in plain.items()
        if name not in skip and any(_problem(str(name), text) for text in _strings(value))
    ]
