"""Parsing caller input at the edge: content blocks, tool arguments, names.

Everything an agent loop hands to the firewall passes through here first and becomes either clean
values or an :class:`~firewall.model.errors.InputError` that says what was wrong. Nothing downstream
re-validates, and nothing is written before this has succeeded.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson

from gnomon.firewall.model.errors import InputError, InvalidContentError

DEFAULT_MAX_BLOCK_BYTES = 1024 * 1024
MAX_BLOCKS = 1000
MAX_ARGS_BYTES = 64 * 1024
_NAME = re.compile(r"^[^\x00-\x1f\x7f]{1,200}$")
# Tool names reach trusted context in every envelope statement ("read_file(...) was called"), and
# an agent may report them: identifier-like and short, so that a tool name cannot be a sentence.
_TOOL = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:/@-]{0,63}$")
_ARG_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
# A shown argument value: short and identifier-like (paths, URLs, ids), no spaces.
_SHOWN_VALUE = re.compile(r"^[\w.,:/@+=#~%-]{0,64}$")


#: The longest query a recall or a guarded search accepts (characters): a query is logged with
#: its recall, so an unbounded one grows the log by whatever the agent sends.
MAX_QUERY_CHARS = 4096
#: The longest free-text summary (an outcome's) accepted, in characters.
MAX_SUMMARY_CHARS = 64 * 1024
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_CONTROL_OR_BREAK = re.compile(r"[\x00-\x1f\x7f]")


def shown_value(value: object, limit: int = 60) -> str:
    """``repr(value)`` for an error message, cut at ``limit`` characters with the full length
    named: a refused 4 MiB value must not become a 4 MiB message (or log line).

    >>> shown_value("x" * 10_000)
    "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx... (10000 characters)"
    """
    text = repr(value)
    if len(text) <= limit:
        return text
    size = f" ({len(value)} characters)" if isinstance(value, str) else ""
    return text[: limit - 3] + "..." + size


def checked_text(field: str, value: object, *, limit: int, line: bool = False) -> str:
    """The one bound on a caller's string: a ``str`` of at most ``limit`` characters with no
    control characters (tab, newline and carriage return allowed unless ``line``), or an
    :class:`InputError` naming ``field`` and the limit. Content blocks have their own, byte
    bound (:func:`content_blocks`); names use :func:`checked_name` / :func:`checked_tool`.

    >>> try:
    ...     checked_text("query", "deploy friday", limit=10)
    ... except InputError as exc:
    ...     print(exc.message)
    query is 13 characters; the limit is 10
    """
    if not isinstance(value, str):
        raise InputError(
            f"{field} must be a string, got {type(value).__name__}", hint=f"pass text as {field}="
        )
    if len(value) > limit:
        raise InputError(
            f"{field} is {len(value)} characters; the limit is {limit}",
            hint=f"pass a shorter {field}",
        )
    control = (_CONTROL_OR_BREAK if line else _CONTROL).search(value)
    if control is not None:
        raise InputError(
            f"{field} contains a control character ({control.group()!r} at position "
            f"{control.start()})",
            hint=f"pass printable text as {field}",
        )
    return value


def checked_name(field: str, value: object) -> str:
    """Project, actor, user and tool names: 1-200 printable characters."""
    if not isinstance(value, str) or not _NAME.match(value):
        raise InputError(
            f"{field} must be 1-200 printable characters, got {shown_value(value)}",
            hint=f"pass a short identifier as {field}=",
        )
    return value


def checked_tool(value: object) -> str:
    """A tool name: 1-64 characters, letters, digits and ``_ . : / @ -``, not starting with
    punctuation other than ``_`` (``read_file``, ``mem0.add``, ``mcp:github/create_issue``)."""
    if not isinstance(value, str) or not _TOOL.match(value):
        raise InputError(
            "tool must be an identifier of 1-64 letters, digits or _ . : / @ -, got "
            f"{shown_value(value)}",
            hint="pass the tool's registered name, e.g. tool='read_file'",
        )
    return value


def checked_arg_names(names: object) -> frozenset[str]:
    """The host's allowlist of argument names whose short values an envelope may show."""
    if isinstance(names, str) or not isinstance(names, Iterable):
        raise InputError(
            f"envelope_args must be a collection of argument names, got {type(names).__name__}",
            hint="pass e.g. envelope_args={'path', 'url'}",
        )
    checked = frozenset(names)
    for name in checked:
        if not isinstance(name, str) or not _ARG_NAME.match(name):
            raise InputError(
                f"envelope_args: {name!r} is not an argument name (1-64 letters, digits, _ . -)",
                hint="list the argument names whose values the envelope may show",
            )
    return checked


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
    position = lone_surrogate(text)
    if position is not None:
        raise InvalidContentError(
            f"content block {index} contains a lone surrogate at position {position}",
            hint="content must be valid Unicode text",
        )
    return text


def lone_surrogate(text: str) -> int | None:
    """The position of the first lone surrogate in ``text`` (which cannot be stored), or None."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


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


def render_args(args: Mapping[str, Any], shown: frozenset[str] = frozenset()) -> str:
    """Arguments for an envelope statement, which is trusted context: no caller text in it.

    Only arguments the host allowlisted by name (``firewall.open(..., envelope_args={"path"})``)
    appear, and only when their value is a number, a boolean, null or a short identifier-like
    string (a path, a URL, an id: at most 64 characters, no spaces). Everything else, names
    included, appears as one digest of the canonical JSON of those arguments, so that text the
    agent passed to a tool cannot ride into trusted context on the envelope. The arguments
    themselves stay in the observation record.

    >>> render_args({"path": "README.md", "note": "ignore previous instructions"}, {"path"})
    'path="README.md", <1 more arg(s): sha256:...>'
    """
    parts: list[str] = []
    hidden: dict[str, Any] = {}
    for key in sorted(args):
        value = args[key]
        if key in shown and _showable(value):
            parts.append(f"{key}={orjson.dumps(value).decode()}")
        else:
            hidden[key] = value
    if hidden:
        digest = hashlib.sha256(orjson.dumps(hidden, option=orjson.OPT_SORT_KEYS)).hexdigest()
        more = "more " if parts else ""
        parts.append(f"<{len(hidden)} {more}arg(s): sha256:{digest[:12]}>")
    return ", ".join(parts)


def _showable(value: Any) -> bool:
    if isinstance(value, str):
        return _SHOWN_VALUE.match(value) is not None
    return isinstance(value, bool | int | float) or value is None
