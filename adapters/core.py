"""The one guarded-client core every SDK wrapper is built from.

A guarded SDK method is written **once**, as a *flow*: a generator that yields each raw SDK call
it needs (:class:`Call`) and does every firewall step between them. :func:`drive` runs a flow
against a sync client; :func:`adrive` awaits each call of an async one and runs the firewall
steps on the guard's worker thread (so the event loop never waits on the firewall's store).
That is the only difference between a sync wrapper and its async twin.

* :class:`guarded` turns a flow into the SDK method of the same name: its signature is the
  installed SDK's (``inspect.signature`` of the SDK method, plus the firewall's keyword-only
  extras such as ``gnomon_origin=``), arguments are bound to it (:class:`Args`), and the async
  variant is a coroutine function (or, for the SDK's paginators, an awaitable object).
* :class:`Resource` is a guarded SDK resource (``client.agents.blocks``): it holds the shared
  firewall side (``_core``) and the raw SDK resource, mounts its child resources, and has an
  async twin made by :meth:`Resource._variant` (the same class with ``_ASYNC = True``).
* :class:`GuardedClient` is the one constructor: it checks the SDK client, builds the
  :class:`~adapters.guard.Guard` and :class:`~adapters.adapter.Adapter` (``.gnomon``) and mounts
  the resources.
* :class:`Refusing`: a guarded client or resource refuses every attribute it does not define
  (:class:`~adapters.errors.RefusedAttributeError`, an ``AttributeError``), never passing it
  through to the SDK.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Callable, Generator, Mapping, Sequence
from concurrent.futures import Executor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from types import MethodType
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar, get_args, get_origin

from gnomon.adapters.base import merged_metadata, rendered_value
from gnomon.adapters.errors import (
    AdapterError,
    BypassRefusedError,
    StoreCallError,
    refused_attribute,
)
from gnomon.adapters.guard import DROP_IN_POLICY
from gnomon.adapters.quoted_fields import unsafe_fields
from gnomon.adapters.withheld import attach, withheld_note
from gnomon.firewall.model.logbook import refused

if TYPE_CHECKING:
    from gnomon.adapters.adapter import Adapter
    from gnomon.adapters.base import StoreBackend, StoreItem
    from gnomon.adapters.guard import Guard, Hits, PendingWrite, Screened
    from gnomon.firewall.gate.policy import ContextPolicy
    from gnomon.firewall.host.channels import Channel, WriteOrigin
    from gnomon.firewall.host.firewall import Firewall
    from gnomon.firewall.host.session import Session

T = TypeVar("T")
Converter = Callable[[str], AbstractContextManager[Any]]


class Refusing:
    """Any public attribute not defined on a guarded client or resource is refused.

    ``_store`` names the store in the error, ``_path`` the resource (``"agents.blocks."``)."""

    _store: ClassVar[str] = ""
    _path: ClassVar[str] = ""
    _hint: ClassVar[str] = ""

    def __getattr__(self, name: str) -> Any:
        guarded = sorted(n for n in dir(type(self)) if not n.startswith("_"))
        hint = f"guarded here: {', '.join(guarded) or 'none'}"
        raise refused_attribute(
            self._store, f"{self._path}{name}", f"{hint}{self._hint}" if self._hint else hint
        )


# -- flows -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Call:
    """One raw SDK call a flow needs: ``fn()`` returns the result (sync) or an awaitable."""

    name: str
    fn: Callable[[], Any]

    def then(self, after: Callable[[Any], Any]) -> Call:
        """The same call, its result passed through ``after`` within the call (a paginator
        read to its end: more requests, under the same error edge)."""
        return Call(self.name, lambda: after(self.fn()))


#: ``extras=`` of a write: the host's ``gnomon_origin=`` (a channel, or a lower label).
WRITE = ("gnomon_origin",)

Flow = Generator[Call, Any, T]


def drive(flow: Flow[T], converted: Converter) -> T:
    """Run a flow against a sync client; SDK errors reach the flow as AdapterErrors."""
    value: Any = None
    error: AdapterError | None = None
    while True:
        try:
            call = flow.throw(error) if error is not None else flow.send(value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        except BypassRefusedError as exc:
            refused(_where(exc), exc)
            raise
        try:
            with converted(call.name):
                value, error = call.fn(), None
        except AdapterError as exc:
            value, error = None, exc


async def adrive(flow: Flow[T], converted: Converter, worker: Executor) -> T:
    """:func:`drive` for an async client: the same flow, each SDK call awaited, and every
    firewall step (the flow between two calls: records, bindings, screening, all store I/O)
    run on the guard's worker thread, so the event loop never waits on the firewall's store."""
    loop = asyncio.get_running_loop()
    value: Any = None
    error: AdapterError | None = None
    while True:
        done, call = await loop.run_in_executor(worker, _step, flow, value, error)
        if done:
            return call  # type: ignore[no-any-return]
        try:
            with converted(call.name):
                out = call.fn()
                value, error = (await out if inspect.isawaitable(out) else out), None
        except AdapterError as exc:
            value, error = None, exc


def _step(flow: Flow[T], value: Any, error: AdapterError | None) -> tuple[bool, Any]:
    """One firewall step of a flow, up to its next SDK call: ``(False, call)``, or
    ``(True, result)`` when the flow returned (StopIteration cannot cross a future)."""
    try:
        return False, flow.throw(error) if error is not None else flow.send(value)
    except StopIteration as stop:
        return True, stop.value
    except BypassRefusedError as exc:
        refused(_where(exc), exc)
        raise


def _where(error: AdapterError) -> str:
    """The guarded call refused, for the ``gnomon`` logger (``mem0.add()``)."""
    return f"{error.store}.{error.call or 'call'}()"


def given(value: Any) -> bool:
    """False for the SDKs' "not given" markers: None, Letta's ``omit``/``NOT_GIVEN``, Fern's
    ``OMIT`` (an Ellipsis)."""
    return not (value is None or value is Ellipsis or type(value).__name__ in ("Omit", "NotGiven"))


# -- arguments bound to the SDK's signature ----------------------------------------------------


class Args:
    """One call's arguments, bound to the SDK method's signature.

    ``a["value"]`` / ``a.get("value")`` read what the caller passed (``get`` treats the SDK's
    "not given" markers as absent); ``a.origin`` is the host's ``gnomon_origin=``;
    :meth:`raw` is the SDK call with the caller's arguments, some replaced (the text the
    firewall recorded, the metadata carrying the belief id)."""

    def __init__(
        self, name: str, raw: Any, bound: inspect.BoundArguments, extras: dict[str, Any]
    ) -> None:
        self.name, self._raw, self._bound, self.extras = name, raw, bound, extras

    def __getitem__(self, key: str) -> Any:
        return self._bound.arguments[key]

    def get(self, key: str, default: Any = None) -> Any:
        value = self._bound.arguments.get(key, default)
        return value if given(value) else default

    def __contains__(self, key: str) -> bool:
        return key in self._bound.arguments

    def arguments(self) -> dict[str, Any]:
        """What the caller passed, by name (``**kwargs`` spread in), "not given" markers and
        None left out."""
        out: dict[str, Any] = {}
        params = self._bound.signature.parameters
        for name, value in self._bound.arguments.items():
            if params[name].kind == inspect.Parameter.VAR_KEYWORD:
                out.update(value)
            elif given(value):
                out[name] = value
        return out

    def sent(self, *names: str) -> dict[str, str]:
        """Those of the fields ``names`` the write sends, rendered: what the store's answer
        must echo (:func:`~adapters.guard.said`; one not sent must be absent or empty)."""
        passed = self.arguments()
        return {name: rendered_value(passed[name]) for name in names if name in passed}

    @property
    def origin(self) -> Any:
        return self.extras.get("gnomon_origin")

    def raw(self, **replaced: Any) -> Call:
        """The SDK method with the caller's arguments (``replaced`` ones swapped in)."""
        bound = inspect.BoundArguments(self._bound.signature, {**self._bound.arguments, **replaced})
        return Call(self.name, lambda: self._raw(*bound.args, **bound.kwargs))


def _with_extras(sig: inspect.Signature, extras: dict[str, Any], returns: Any) -> inspect.Signature:
    params = list(sig.parameters.values())
    cut = next((i for i, p in enumerate(params) if p.kind == p.VAR_KEYWORD), len(params))
    added = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=note)
        for name, note in extras.items()
        if name not in sig.parameters
    ]
    annotation = sig.return_annotation if returns is None else returns
    return sig.replace(
        parameters=[*params[:cut], *added, *params[cut:]], return_annotation=annotation
    )


class guarded:
    """A flow ``fn(self, args: Args) -> Flow`` as the guarded SDK method of the same name.

    The method's signature is the SDK's own (the resource's ``_SDK`` class, sync or async),
    plus ``extras`` (keyword-only, default None). ``sync`` / ``lazy``: what the sync variant
    wraps the flow's result in, and (for the SDK's async paginators, which are awaitable and
    async-iterable rather than coroutines) what the async variant returns around a loader;
    ``awaited``: what the async variant wraps the flow's result in (an async pager).
    """

    def __init__(
        self,
        fn: Callable[..., Flow[Any]] | None = None,
        *,
        extras: tuple[str, ...] = (),
        returns: Any = None,
        sync: Callable[[Any], Any] | None = None,
        lazy: Callable[[Callable[[], Any]], Any] | None = None,
        awaited: Callable[[Any], Any] | None = None,
    ) -> None:
        self.fn = fn if fn is not None else _passthrough
        self.extras = {n: "WriteOrigin | None" if n == "gnomon_origin" else "Any" for n in extras}
        self.returns, self.sync, self.lazy, self.awaited = returns, sync, lazy, awaited
        self.name = ""
        self._built: dict[type, Callable[..., Any]] = {}

    def __call__(self, fn: Callable[..., Flow[Any]]) -> guarded:
        self.fn = fn
        return self

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type) -> Any:
        fn = self._built.get(owner) or self._build(owner)
        return fn if obj is None else MethodType(fn, obj)

    def _build(self, owner: Any) -> Callable[..., Any]:
        sdk = getattr(owner._SDK[owner._ASYNC], self.name)
        sig = inspect.signature(sdk)
        params = [p for p in sig.parameters.values() if p.name != "self"]
        bind_sig = sig.replace(parameters=params)
        call, flow, extras = f"{owner._path}{self.name}", self.fn, tuple(self.extras)

        def bind(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Flow[Any]:
            taken = {k: kwargs.pop(k) for k in extras if k in kwargs}
            bound = bind_sig.bind(*args, **kwargs)
            return flow(obj, Args(call, getattr(obj._raw, self.name), bound, taken))

        method: Callable[..., Any]
        if not owner._ASYNC:

            def method(obj: Any, *args: Any, **kwargs: Any) -> Any:
                out = drive(bind(obj, args, kwargs), obj._converted)
                return out if self.sync is None else self.sync(out)

        elif self.lazy is not None:
            lazy = self.lazy

            def method(obj: Any, *args: Any, **kwargs: Any) -> Any:
                return lazy(lambda: adrive(bind(obj, args, kwargs), obj._converted, obj._worker()))

        else:

            async def method(obj: Any, *args: Any, **kwargs: Any) -> Any:
                out = await adrive(bind(obj, args, kwargs), obj._converted, obj._worker())
                return out if self.awaited is None else self.awaited(out)

        method.__name__ = self.name
        method.__qualname__ = f"{owner.__qualname__}.{self.name}"
        method.__module__ = owner.__module__
        method.__doc__ = self.fn.__doc__ or sdk.__doc__
        method.__signature__ = _with_extras(sig, self.extras, self.returns)  # type: ignore[attr-defined]
        self._built[owner] = method
        return method


def _passthrough(self: Any, a: Args) -> Flow[Any]:
    """A container call (no memory text): the SDK's answer, unchanged."""
    return (yield a.raw())


def container(*dropped: str) -> guarded:
    """A container call (a user, a session: no memory text) whose answer is screened as
    :meth:`Core.container` screens it, ``dropped`` naming its free-form fields."""

    def flow(self: Any, a: Args) -> Flow[Any]:
        return self._core.container((yield a.raw()), dropped)

    return guarded(flow)


def deleting(store_id: Callable[[Args], str]) -> guarded:
    """A guarded ``delete`` of the item whose store id ``store_id`` makes from the call's
    arguments: a revision first (:meth:`Core.delete`), then the SDK call; ``gnomon_origin=``
    names a host write."""

    def flow(self: Any, a: Args) -> Flow[Any]:
        return (yield from self._core.delete(store_id(a), a.raw(), a.origin))

    return guarded(flow, extras=WRITE)


# -- the firewall side a client's resources share ---------------------------------------------


class Core:
    """The firewall side shared by one guarded client's resources, sync and async alike:
    the one write-through (:meth:`write`), the one delete (:meth:`delete`), screening, and
    the annotated copies a read hands back."""

    #: What a write's text is called in its refusal (``"content must be a string"``).
    _text_name: ClassVar[str] = "text"

    def __init__(self, adapter: Adapter) -> None:
        self.adapter = adapter
        self.guard: Guard = adapter._guard

    def checked(self, call: str, metadata: Any) -> dict[str, Any]:
        """The caller's metadata (the SDK's "not given" markers as none) checked against the
        store's limits (:func:`~adapters.base.merged_metadata`), before anything is recorded."""
        limits = self.adapter._backend.limits
        return merged_metadata(
            self.guard.store, call, limits, metadata if given(metadata) else None
        )

    def begin(
        self,
        call: str,
        text: Any,
        metadata: Any,
        origin: WriteOrigin | None,
        sent: Mapping[str, str] | None = None,
    ) -> PendingWrite:
        """The firewall half of one write: its text (a string, else refused) recorded with its
        origin (the host's ``gnomon_origin=``, else the agent's) and bound ``pending``;
        ``sent``: the write's other rendered fields (:meth:`Args.sent`), which the store's
        answer must echo to be bound (:meth:`Guard.confirm_write`)."""
        if not isinstance(text, str):
            raise StoreCallError(
                f"{self._text_name} must be a string, got {type(text).__name__}",
                store=self.guard.store,
                call=call,
            )
        return self.guard.begin_write(
            text, self.checked(call, metadata), origin=origin, rendered=sent
        )

    def write(
        self,
        pending: PendingWrite,
        call: Call,
        parse: Callable[[Any], StoreItem],
        *,
        stored: bool = False,
    ) -> Flow[tuple[Any, StoreItem]]:
        """The store half of a write: the SDK call, its item parsed; if either fails the
        binding is ``failed`` (:meth:`Guard.writing`), else ``written`` (with the stored
        item's hash when ``stored``: fields the store sets are covered)."""
        with self.guard.writing(pending, call.name):
            out = yield call
            item = parse(out)
        self.guard.confirm_write(pending, item.store_id, stored=item if stored else None)
        return out, item

    def delete(self, store_id: str, call: Call, origin: Any) -> Flow[Any]:
        """A delete is a revision first (:meth:`Guard.begin_delete`), then the SDK call."""
        binding = self.guard.begin_delete(store_id, origin=origin, call=call.name)
        with self.guard.deleting(binding, call.name):
            return (yield call)

    def screen(self, items: Sequence[StoreItem], query: str, limit: int | None = None) -> Hits:
        k = limit if limit is not None else max(1, min(len(items), 200))
        return self.guard.screen(items, query=query, k=k, limit=limit)

    def passed(self, items: Sequence[StoreItem], query: str, limit: int | None = None) -> list[Any]:
        """The hits that passed, annotated; ``.gnomon`` says what was withheld and why.
        ``limit``: the caller's ``top_k`` of an over-fetched search (:func:`fetch_size`): at
        most that many, trusted first."""
        hits = self.screen(items, query, limit)
        return attach([self.annotate(s) for s in hits if s.passed], hits.summary)

    def one(self, item: StoreItem, query: str) -> Any:
        """One item read: see :meth:`each`."""
        (shown,) = self.each([item], query)
        return shown

    def each(self, items: Sequence[StoreItem], query: str) -> list[Any]:
        """Items read, every one in its place (a write's answer): annotated if it passed, else
        the same shape with every text field blanked (:func:`blanked`; its text field "") and
        ``gnomon`` saying why it was withheld."""
        return [self._shown(s) for s in self.screen(items, query)]

    def _shown(self, screened: Screened) -> Any:
        if screened.passed:
            return self.annotate(screened)
        raw, field = screened.item.raw, screened.item.text_field
        text = {field: ""} if field is not None and "." not in field else {}
        update = {**undeclared(raw), **blanked(raw), **text, "gnomon": withheld_note(screened)}
        return raw.model_copy(update=update)

    def container(self, found: Any, dropped: Sequence[str], *, skip: Sequence[str] = ()) -> Any:
        """A container the store answered with (a user, a session): text it keeps for the
        caller with no label and no binding. Its free-form fields (``dropped``: metadata, an
        LLM's classifications) and any field the SDK does not declare (a hostile server's
        extra key) are not returned, as a read's free-form metadata is not; any
        other field (but ``skip``, screened apart) holding a credential or markup that could
        break out of a model's context (:func:`~adapters.quoted_fields.unsafe_fields`) is
        blanked. ``gnomon["withheld_fields"]`` names them."""
        if found is None:
            return None
        declared = getattr(type(found), "model_fields", None) or getattr(found, "__fields__", {})
        fields = found.model_dump() if hasattr(found, "model_dump") else found.dict()
        extra = [k for k, v in fields.items() if k not in declared and v is not None]
        given = [f for f in (*dropped, *extra) if getattr(found, f, None) is not None]
        withheld = sorted({*given, *unsafe_fields(found, skip=(*dropped, *skip))})
        if not withheld:
            return found
        return attach(self.copied(found, dict.fromkeys(withheld)), {"withheld_fields": withheld})

    def copied(self, model: Any, update: Mapping[str, Any]) -> Any:
        """A copy of an SDK model with ``update`` (pydantic 2; zep-python's are pydantic 1)."""
        return model.model_copy(update=update)

    def annotate(self, screened: Screened) -> Any:
        """A copy of the SDK object with its labels as ``gnomon`` (the models allow extras)
        and, when quoted, its text marked (:meth:`Screened.shown`)."""
        raw = screened.item.raw
        return raw.model_copy(update={**undeclared(raw), **tokened(raw), **screened.shown()})


def _identifying(name: str) -> bool:
    return name == "id" or name.endswith(("_id", "uuid", "uuid_", "_at"))


def _worded(name: str, value: Any) -> bool:
    """True for an id or timestamp field holding a string that is not one token (a sentence,
    markup), or a list of ids (an edge's ``episode_uuids``) holding one: the server's text
    where an id belongs."""
    if isinstance(value, list) and name.endswith(("_ids", "uuids")):
        return any(not one_token(v) for v in value)
    return _identifying(name) and isinstance(value, str) and not one_token(value)


def tokened(model: Any) -> dict[str, Any]:
    """The id and timestamp fields of an item returned as accepted that hold more than one
    token (:func:`one_token`), blanked: None where the SDK allows it, else "". No binding
    covers an id or a date (the store sets them), so, as in a status object
    (:func:`settled`) or a mem0 row, one that could carry a sentence is not returned; the
    item's text and covered fields still flow (withholding the item would let any server
    hide a memory by dressing its id, with nothing more shown to the caller either way).
    Pydantic 2 models and zep-python's pydantic 1 models alike."""
    declared = getattr(type(model), "model_fields", None)
    if declared is not None:
        required = {name: info.is_required() for name, info in declared.items()}
    else:
        required = {name: f.required for name, f in type(model).__fields__.items()}
    out: dict[str, Any] = {}
    for name, needed in required.items():
        value = getattr(model, name, None)
        if _worded(name, value):
            out[name] = [] if isinstance(value, list) or needed else None
            out[name] = "" if needed and isinstance(value, str) else out[name]
    return out


def blanked(model: Any) -> dict[str, Any]:
    """The fields of a withheld SDK model that carry the store's text, blanked: every string,
    list and mapping but its ids and timestamps of one token (an optional string becomes None,
    a required one ""), so no text of an item the policy withheld reaches the caller, whichever
    field holds it."""
    fields = type(model).model_fields
    out: dict[str, Any] = {}
    for name, info in fields.items():
        value = getattr(model, name, None)
        if value is None or (_identifying(name) and not _worded(name, value)):
            continue
        if isinstance(value, str):
            out[name] = "" if info.is_required() else None
        elif isinstance(value, list | tuple):
            out[name] = []
        elif isinstance(value, Mapping):
            out[name] = {}
        elif hasattr(type(value), "model_fields"):
            out[name] = settled(value)
    return out


def undeclared(model: Any) -> dict[str, None]:
    """The keys a server sent beside an SDK model's declared fields (the SDKs' models keep
    such extras and return them), each as None: no binding covers them, so none of their text
    reaches the caller (``gnomon``, the firewall's own annotation, is left alone). Pydantic 2
    models name them ``model_extra``; zep-python's pydantic 1 models keep them as attributes
    their class does not declare."""
    extra = getattr(model, "model_extra", None)
    if extra is None and hasattr(type(model), "__fields__") and hasattr(model, "__dict__"):
        extra = {k: v for k, v in vars(model).items() if k not in type(model).__fields__}
    return {k: None for k in extra or {} if k != "gnomon"}


#: A string an identifying field may keep in a server's status object: one token (an id, a
#: timestamp), never a sentence.
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+-]{0,127}")


def one_token(value: Any) -> bool:
    """True for a string that is one token (an id, a date, a timestamp): it cannot hold a
    sentence or markup."""
    return isinstance(value, str) and _TOKEN.fullmatch(value) is not None


def _declared(annotation: Any) -> set[Any]:
    """The values a field's annotation declares (its ``Literal`` members, however nested)."""
    found: set[Any] = set()
    stack = [annotation]
    while stack:
        one = stack.pop()
        if get_origin(one) is Literal:
            found.update(get_args(one))
        else:
            stack.extend(get_args(one))
    return found


def settled(model: Any, fields: Sequence[str] | None = None) -> Any:
    """A copy of an SDK model the server sets and changes on its own (a Zep write's ``task``,
    an episode's ``content_policy``: no binding can cover them without drifting by itself)
    holding nothing that can carry text: numbers and booleans as sent, a string only where it
    is one of the values the SDK declares for the field (an enum's) or, in an id or timestamp
    field, one token; nested models likewise; every other value (and undeclared key) None.
    ``fields``: settle only those (an episode's ``source`` and ``content_policy``), the rest
    as they are."""
    if model is None:
        return None
    declared = type(model).model_fields
    update: dict[str, Any] = undeclared(model) if fields is None else {}
    for name in declared if fields is None else fields:
        info, value = declared[name], getattr(model, name, None)
        if value is None or isinstance(value, bool | int | float):
            continue
        if hasattr(type(value), "model_fields"):
            update[name] = settled(value)
        elif isinstance(value, str) and (
            value in _declared(info.annotation) or (_identifying(name) and one_token(value))
        ):
            continue
        else:
            update[name] = None
    return model.model_copy(update=update)


# -- resources and the one constructor -----------------------------------------------------------


_VARIANTS: dict[type, type] = {}


def sdk_pair(module: Any, name: str) -> tuple[Any, Any]:
    """A resource's SDK classes, sync and async (``FooResource`` and ``AsyncFooResource``)."""
    return getattr(module, name), getattr(module, f"Async{name}")


class Resource(Refusing):
    """A guarded SDK resource: the shared firewall side (``_core``, with ``.guard``), the raw SDK
    resource (``_raw``), and child resources named in ``_children`` (each mounted on the raw
    resource's attribute of the same name, in this resource's sync or async variant).

    ``_SDK``: the SDK's (sync, async) resource classes whose signatures the guarded methods
    take; ``_converted``: the store's error edge (a context manager naming the call)."""

    _ASYNC: ClassVar[bool] = False
    _SDK: ClassVar[tuple[Any, Any]] = (None, None)
    _children: ClassVar[dict[str, type[Resource]]] = {}
    _converted: ClassVar[Converter]

    def __init__(self, core: Any, raw: Any) -> None:
        self._core, self._raw = core, raw
        for name, child in self._children.items():
            setattr(self, name, child._variant(self._ASYNC)(core, getattr(raw, name)))

    def _worker(self) -> Executor:
        return self._core.guard.worker()  # type: ignore[no-any-return]

    @classmethod
    def _variant(cls, is_async: bool) -> type[Resource]:
        """This resource's sync or async twin: one class body, ``_ASYNC`` flipped."""
        if is_async == cls._ASYNC:
            return cls
        if cls not in _VARIANTS:
            name = f"Async{cls.__name__}"
            body = {"_ASYNC": True, "__module__": cls.__module__, "__qualname__": name}
            _VARIANTS[cls] = type(name, (cls,), body)
        return _VARIANTS[cls]


def children(*resources: type[Resource]) -> dict[str, type[Resource]]:
    """A resource's ``_children``: each mounted on the SDK attribute its ``_path`` ends in
    (``"agents.blocks."`` on ``agents.blocks``), so the name is written once."""
    return {r._path.rstrip(".").rpartition(".")[2]: r for r in resources}


def _close(self: Any) -> None:
    """End the guard's session (when the guarded client started it)."""
    self._close_now()


async def _aclose(self: Any) -> None:
    """End the guard's session, off the event loop (a store write)."""
    await asyncio.to_thread(self._close_now)


class Closing:
    """``close()``: sync on a sync client; a coroutine function on an async one."""

    def __get__(self, obj: Any, owner: Any) -> Any:
        fn = _aclose if owner._ASYNC else _close
        return fn if obj is None else MethodType(fn, obj)


class Constructed:
    """The one constructor of every guarded client (mem0's four, the local store's, and every
    :class:`GuardedClient`): check the client (:meth:`_check_client`), build the
    :class:`~adapters.guard.Guard` for ``_store`` and the :class:`~adapters.adapter.Adapter`
    (``.gnomon``) over :meth:`_adapter_backend`, then :meth:`_mount` the client.

    ``sync_client=``: for an async client, the sync one ``.gnomon`` (audit, import, export,
    sync) runs on; ignored by a sync client."""

    _store: ClassVar[str] = ""
    gnomon: Adapter

    def __init__(
        self,
        client: Any,
        wall: Firewall,
        *,
        project: str | None = None,
        actor: str = "agent",
        user: str | None = None,
        session: Session | None = None,
        policy: ContextPolicy | str = DROP_IN_POLICY,
        user_channel: Channel | None = None,
        sync_client: Any = None,
    ) -> None:
        from gnomon.adapters.adapter import Adapter
        from gnomon.adapters.guard import Guard

        self._check_client(client)
        guard = Guard(
            wall,
            self._store,
            session=session,
            project=project,
            actor=actor,
            user=user,
            policy=policy,
            user_channel=user_channel,
        )
        self.gnomon = Adapter(guard, self._adapter_backend(client, sync_client))
        self._mount(client)

    def _check_client(self, client: Any) -> None:
        """Refuse a client of the wrong kind (an async one in a sync wrapper…)."""

    def _adapter_backend(self, client: Any, sync_client: Any) -> StoreBackend:
        raise NotImplementedError

    def _mount(self, client: Any) -> None:
        """Hold the raw client (and, for an SDK client, mount the guarded resources)."""


class GuardedClient(Constructed, Resource):
    """Every guarded SDK client (see the store modules for the surface), built by the one
    constructor (:class:`Constructed`).

    A subclass names the SDK's client classes (``_SDK``: sync, async), the backend its
    ``.gnomon`` runs on (:meth:`_backend`, always over a sync client: :meth:`_sync_twin` makes
    one sharing an async client's settings, unless ``sync_client=`` is given) and the shared
    firewall side (``_Core``, built from the adapter)."""

    _Core: ClassVar[Callable[[Adapter], Any]]
    _client_hint: ClassVar[str | None] = None

    def _adapter_backend(self, client: Any, sync_client: Any) -> StoreBackend:
        return self._backend(client if not self._ASYNC else sync_client or self._sync_twin(client))

    def _mount(self, client: Any) -> None:
        Resource.__init__(self, type(self)._Core(self.gnomon), client)
        self._wire(client)

    def _wire(self, client: Any) -> None:
        """Hand a resource the raw siblings it also calls (Zep's thread context reads the
        thread's graph)."""

    def _check_client(self, client: Any) -> None:
        """Refuse a client of the wrong kind (an async one in a sync wrapper…)."""
        expected, other = self._SDK[self._ASYNC], self._SDK[not self._ASYNC]
        if not isinstance(client, expected):
            name = type(self).__name__
            twin = name.replace("GuardedAsync", "Guarded", 1)
            if not self._ASYNC:
                twin = name.replace("Guarded", "GuardedAsync", 1)
            raise StoreCallError(
                f"expected a {expected.__module__.split('.')[0]} {expected.__name__}, "
                f"got {type(client).__name__}",
                store=self._store,
                call="__init__",
                hint=self._client_hint or f"use {twin} for {other.__name__}",
            )

    def _backend(self, client: Any) -> StoreBackend:
        raise NotImplementedError

    def _sync_twin(self, client: Any) -> Any:
        raise NotImplementedError

    def _close_now(self) -> None:
        self.gnomon.close()

    close = Closing()


__all__ = [
    "WRITE",
    "Args",
    "Call",
    "Constructed",
    "Core",
    "Flow",
    "GuardedClient",
    "Refusing",
    "Resource",
    "adrive",
    "children",
    "container",
    "deleting",
    "drive",
    "given",
    "guarded",
    "one_token",
    "sdk_pair",
    "settled",
    "tokened",
    "undeclared",
]
