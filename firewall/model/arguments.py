"""Checking a public entry's arguments against its signature, once, at the edge.

:func:`checked_call` wraps a public method so that whatever a caller passes, a bad argument
becomes an :class:`~firewall.model.errors.InputError` naming the parameter, never a ``TypeError``,
a pydantic ``ValidationError`` or a ``UnicodeEncodeError`` from deep inside a store:

* every argument is validated strictly against its annotation (a pydantic ``TypeAdapter`` in
  strict mode: a string is not an enum member, ``1`` is not ``True``, a list is not a string);
* text anywhere in an argument (nested lists and mappings included) must be valid Unicode: a
  lone surrogate cannot be stored, hashed or sent to a model;
* datetimes anywhere in an argument must carry a timezone: a naive time means different
  moments on different hosts;
* containers (lists, mappings, dataclass records) deeper than :data:`MAX_DEPTH` (or cyclic)
  are refused.

A ``ValidationError`` raised while the wrapped call runs (a chain record refusing a field, an
iterable argument validated lazily) is converted the same way, so none escapes raw.

Every refusal that leaves a checked call (a bad argument, a gate refusal, a grant or action
refusal) is one INFO record on the ``gnomon`` logger (:func:`firewall.model.logbook.refused`): its
type
and the call, never its message, which may quote the refused value.

>>> from gnomon.firewall.model.errors import InputError
>>> @checked_call
... def greet(name: str) -> str:
...     return f"hello {name}"
>>> try:
...     greet(3)
... except InputError as exc:
...     print(exc.message)
greet(): name: Input should be a valid string (got 3)
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, TypeVar, cast

from pydantic import ConfigDict, TypeAdapter, ValidationError

from gnomon.firewall.model.content import lone_surrogate
from gnomon.firewall.model.errors import (
    ActionError,
    GateError,
    GrantError,
    InputError,
    InvalidOriginError,
    PolicyError,
)
from gnomon.firewall.model.logbook import refused

F = TypeVar("F", bound=Callable[..., Any])

MAX_DEPTH = 32
_STRICT = ConfigDict(strict=True, arbitrary_types_allowed=True)


#: The refusals a checked call logs (store failures and log integrity errors are not refusals).
REFUSALS = (InputError, GateError, GrantError, ActionError, PolicyError)

#: Parameters each callee checks itself, more strictly than an annotation can.
SELF_CHECKED = frozenset({"self", "cls", "grant", "policy"})


def checked_call(func: F) -> F:
    """Validate ``func``'s arguments on every call; see the module docstring.

    Validation only checks: ``func`` receives the caller's values unchanged, so no coercion (a
    dict turned into a model, say) opens a route the function's own checks do not expect.
    ``grant`` parameters are left to the grant verifier and ``policy`` parameters to
    :func:`firewall.gate.policy.revalidate`, which have their own typed refusals.
    """
    return _checked(func, frozenset())


def checked_streaming(*names: str) -> Callable[[F], F]:
    """:func:`checked_call` for a function that consumes the parameters ``names`` item by item
    and runs :func:`check_value` on each item itself (a bulk import may be handed a generator,
    which cannot be scanned up front, or a list of a million records, which should not be
    scanned twice). Their annotations are still checked."""
    return lambda func: _checked(func, frozenset(names))


def _checked(func: F, streamed: frozenset[str]) -> F:
    signature = inspect.signature(func)
    name = func.__name__
    adapters: dict[str, TypeAdapter[Any]] = {}

    def check(param: str, value: Any) -> None:
        if not adapters:
            adapters.update(_adapters(func, signature))
        adapter = adapters.get(param)
        if adapter is not None:
            adapter.validate_python(value, strict=True)

    where = f"{func.__qualname__}()"

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return checked(*args, **kwargs)
        except REFUSALS as exc:
            refused(where, exc)
            raise

    def checked(*args: Any, **kwargs: Any) -> Any:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise InputError(f"{name}(): {exc}", hint=f"see help({name})") from None
        for param, value in bound.arguments.items():
            if param in ("self", "cls"):
                continue
            if param not in streamed:
                check_value(f"{name}()", param, value)
            try:
                check(param, value)
            except ValidationError as exc:
                raise record_error(f"{name}(): {param}", exc) from None
        try:
            return func(*args, **kwargs)
        except ValidationError as exc:  # a record built inside, or an argument consumed lazily
            raise record_error(f"{name}()", exc) from None

    return cast(F, wrapper)


def _adapters(func: Callable[..., Any], signature: inspect.Signature) -> dict[str, Any]:
    """A strict adapter per annotated parameter; an annotation that cannot be resolved at run
    time (a name imported only for type checking) is skipped, not guessed."""
    found: dict[str, Any] = {"": None}  # never empty once built
    namespace = dict(vars(inspect.getmodule(func)) if inspect.getmodule(func) else {})
    for name, param in signature.parameters.items():
        if name in SELF_CHECKED or param.annotation is inspect.Parameter.empty:
            continue
        annotation = param.annotation
        try:
            hint = eval(annotation, namespace) if isinstance(annotation, str) else annotation
            found[name] = TypeAdapter(hint, config=_STRICT)
        except Exception:
            continue
    return found


def check_value(func: str, param: str, value: Any) -> None:
    """Refuse lone surrogates, naive datetimes and over-deep or cyclic containers in ``value``."""
    _scan(func, param, value, 0, set())


def _scan(func: str, param: str, value: Any, depth: int, seen: set[int]) -> None:
    if isinstance(value, str):
        position = lone_surrogate(value)
        if position is not None:
            raise InputError(
                f"{func}: {param} contains a lone surrogate at position {position}",
                hint="pass valid Unicode text",
            )
        return
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise InputError(
                f"{func}: {param} is a datetime without a timezone ({value.isoformat()})",
                hint="pass timezone-aware datetimes, e.g. datetime.now(UTC)",
            )
        return
    record = dataclasses.is_dataclass(value) and not isinstance(value, type)
    if not (record or isinstance(value, list | tuple | set | frozenset | Mapping)):
        return
    if depth >= MAX_DEPTH or id(value) in seen:
        raise InputError(
            f"{func}: {param} is nested deeper than {MAX_DEPTH} levels or refers to itself",
            hint="pass plain, shallow values",
        )
    seen.add(id(value))
    if record:
        items = [getattr(value, f.name) for f in dataclasses.fields(value)]
    elif isinstance(value, Mapping):
        items = [item for pair in value.items() for item in pair]
    else:
        items = list(value)
    for item in items:
        _scan(func, param, item, depth + 1, seen)
    seen.discard(id(value))


def record_error(where: str, exc: ValidationError) -> InputError:
    """A ``ValidationError`` as an :class:`InputError` naming ``where`` (a call and parameter,
    or a record type) and each failing field; an origin field gives InvalidOriginError."""
    problems = []
    origin = "origin" in where
    for error in exc.errors(include_url=False):
        loc = [str(part) for part in error["loc"]]
        origin = origin or any("origin" in part for part in loc[:1])
        field = ".".join(loc)
        prefix = f"{field}: " if field else ""
        shown = repr(error.get("input"))
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        if error["type"] == "sequence_str":
            problems.append(f"{prefix}expected a list of ids or values, not a single string")
        else:
            problems.append(f"{prefix}{error['msg']} (got {shown})")
    kind = InvalidOriginError if origin else InputError
    return kind(f"{where}: " + "; ".join(problems[:5]), hint="check the type of that value")


__all__ = ["MAX_DEPTH", "check_value", "checked_call", "checked_streaming", "record_error"]
