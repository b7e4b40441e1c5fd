"""Parsing caller input at the edge: content blocks, tool arguments, names.

Everything an agent loop hands to the firewall passes through here first and becomes either clean
values or an :class:`~firewall.errors.InputError` that says what was wrong. Nothing downstream
re-validates, and nothing is written before this has succeeded.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from firewall.errors import InputError, InvalidContentError

DEFAULT_MAX_BLOCK_BYTES = 1024 * 1024
MAX_BLOCKS = 1000
MAX_ARGS_BYTES = 64 * 1024
_NAME = re.compile(r"^[^\x00-\x1f\x7f]{1,200}$")
_INLINE_ARG = re.compile(r"^[^\x00-\x1f\x7f]{0,80}$")


def checked_name(field: str, value: object) -> str:
    """Project, actor, user and tool names: 1-200 printable characters."""
    if not isinstance(value, str) or not _NAME.match(value):
        raise InputError(
            f"{field} must be 1-200 printable characters, got {value!r}",
            hint=f"pass a short identifier as {field}=",
        )
    return value


def _block(index: int, block: object, max_bytes: int) -> str:
    if isinstance(block, bytes | bytearray | memoryview):
        raw = bytes(block)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidContentError(
                f"content block {index} is not valid UTF-8 (byte {exc.start}: "
                f"{raw[exc.start : exc.start + 1]!r})",
                hint="decode binary tool output yourself, or store a reference to it instead",
            ) from exc
    elif isinstance(block, str):
        text = block
    else:
        raise InvalidContentError(
            f"content block {index} is a {type(block).__name__}; expected str or UTF-8 bytes",
            hint="pass text, or a list of text blocks",
        )
    if "\x00" in text:
        raise InvalidContentError(
            f"content block {index} contains NUL characters: it looks binary",
            hint="binary output cannot become a memory; store a reference to it instead",
        )
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise InvalidContentError(
            f"content block {index} is {size} bytes; the limit is {max_bytes}",
            hint="split it into smaller blocks or raise max_block_bytes in firewall.open()",
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidContentError(
            f"content block {index} contains a lone surrogate at position {exc.start}",
            hint="content must be valid Unicode text",
        ) from exc
    return text


def content_blocks(content: object, max_bytes: int = DEFAULT_MAX_BLOCK_BYTES) -> list[str]:
    """Normalize observed content into non-empty text blocks."""
    if content is None:
        return []
    items: Sequence[object]
    if isinstance(content, str | bytes | bytearray | memoryview):
        items = [content]
    elif isinstance(content, Sequence):
        items = content
    else:
        raise InvalidContentError(
            f"content is a {type(content).__name__}; expected str, bytes or a list of them",
            hint="pass the tool's text output",
        )
    if len(items) > MAX_BLOCKS:
        raise InvalidContentError(
            f"content has {len(items)} blocks; the limit is {MAX_BLOCKS}",
            hint="observe large results in several calls",
        )
    blocks = [_block(i, item, max_bytes) for i, item in enumerate(items)]
    return [b for b in blocks if b.strip()]


def statement_text(statement: object, max_bytes: int = DEFAULT_MAX_BLOCK_BYTES) -> str:
    blocks = content_blocks(statement, max_bytes)
    if len(blocks) != 1:
        raise InvalidContentError(
            "a statement must be one non-empty text",
            hint="pass a single string to remember()",
        )
    return blocks[0]


def checked_args(args: Mapping[str, Any] | None) -> dict[str, Any]:
    """Tool arguments must be a JSON object of modest size."""
    if args is None:
        return {}
    if not isinstance(args, Mapping):
        raise InputError(
            f"args must be a mapping, got {type(args).__name__}", hint="pass args as a dict"
        )
    try:
        raw = orjson.dumps(dict(args), option=orjson.OPT_SORT_KEYS)
    except TypeError as exc:
        raise InputError(
            f"args are not JSON-serializable: {exc}", hint="pass strings, numbers, lists, dicts"
        ) from exc
    if len(raw) > MAX_ARGS_BYTES:
        raise InputError(f"args are {len(raw)} bytes; the limit is {MAX_ARGS_BYTES}")
    parsed: dict[str, Any] = orjson.loads(raw)
    return parsed


def block_hash(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def render_args(args: Mapping[str, Any]) -> str:
    """Arguments for an envelope statement. Long or multi-line values appear as digests only,
    so that text the agent passed to a tool cannot ride into trusted context on the envelope."""
    parts = []
    for key in sorted(args):
        value = args[key]
        # Argument names are caller text too: the same inline rule applies to them.
        name = key if _INLINE_ARG.match(key) else _digest(key)
        scalar = isinstance(value, bool | int | float) or value is None
        if scalar or (isinstance(value, str) and _INLINE_ARG.match(value)):
            shown = orjson.dumps(value).decode()
        else:
            shown = _digest(value)
        parts.append(f"{name}={shown}")
    return ", ".join(parts)


def _digest(value: Any) -> str:
    digest = hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()
    return f"<sha256:{digest[:12]}>"
