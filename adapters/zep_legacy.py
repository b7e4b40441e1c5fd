"""Legacy Zep behind the firewall: :class:`GuardedLegacyZep` (``zep-python`` 2.x, API ``/api/v2``).

For servers still on Zep's session/memory API. New code should use zep-cloud and
:mod:`adapters.zep`. One line to adopt::

    zep = GuardedLegacyZep(Zep(base_url=..., api_key=...), wall, project="shop", user="alice")

Always pass ``base_url`` (the server root; the SDK appends ``/api/v2``) to ``Zep``: without it
zep-python 2.0.2 silently uses ``"None/api/v2"``. zep-python also needs ``packaging``, which it
does not declare: ``pip install 'gnomon[zep-legacy]'`` installs both.

Guarded (same names, signatures and return types as ``zep_python``); every other SDK attribute
is refused (:class:`~adapters.errors.BypassRefusedError`):

* ``zep.memory.add`` (writes), ``zep.memory.get``, ``zep.memory.search_sessions`` and
  ``zep.memory.get_session_messages`` (reads), ``zep.memory.update_message_metadata``
  (the firewall's ``gnomon_*`` keys refused; a message the firewall holds is refused: its
  binding covers its metadata);
* ``zep.memory.add_session / get_session`` and ``zep.user.add / get`` (containers: their
  ``metadata`` and a session's ``classifications`` are not returned, a field holding a
  credential or markup is blanked, and a session's ``facts``, memory text, are screened as
  :meth:`get`'s facts are).

**Writes.** Each message is recorded with its origin (the agent's, joined with what its session
has read, unless the host passes ``gnomon_origin=``), then sent with the firewall's four
metadata keys in ``Message.metadata``. ``memory.add`` returns no message ids, so the adapter
reads the session's last messages back (``memory.get(lastn=)``) and binds each by the belief id
in its metadata. Store ids are ``"<session_id>/<message uuid>"``.

**Reads.** Messages are screened as stored items. ``relevant_facts`` (``Fact{uuid, fact}``),
``facts`` (bare strings) and summaries are extracted server-side by an LLM and carry no
provenance: each is treated as an item written around the firewall, i.e. unknown external
content bound under ``"<session>/fact:<uuid or hash>"`` / ``"<session>/summary:<uuid>"``, and
screened like any other hit (the default policy drops it, a laxer one may show it labelled).
Nothing a screen excluded is returned: ``memory.get`` and ``search_sessions`` rebuild their
responses from what passed (a search result keeps only its parts that passed; a memory's
free-form ``metadata`` is not returned). A message's ``role``, ``role_type`` and metadata are
covered by its binding's hash, so a store edit of who said it is drift.

**No per-message delete.** The v2 API cannot delete or edit one message. The contract's
``delete`` marks the message with ``gnomon_deleted=true`` (the firewall hides its belief and the
backend no longer lists it) and ``update`` is that delete plus a new message; the old text stays
on the Zep server until its session is deleted (``memory.delete``, refused here: do it from
host code).

**Failures.** HTTP errors become :class:`~adapters.errors.StoreCallError` (``status`` set),
timeouts :class:`~adapters.errors.StoreTimeoutError`, a response not in the documented shape
:class:`~adapters.errors.StoreResponseError`, each naming ``zep-legacy`` and the call. A write
the store fails after the firewall recorded it leaves the binding ``failed`` and the belief
hidden.

The guarded methods are flows on the one adapter core (:mod:`adapters.core`), each with the
installed ``zep_python`` method's signature. zep-python's async client is not wrapped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from gnomon.adapters.errors import sdk_imports

with sdk_imports("zep-legacy", "zep-python"):
    from pydantic import v1 as pydantic_v1
    from zep_python.client import Zep
    from zep_python.core.api_error import ApiError
    from zep_python.external_clients import memory as sdk_memory
    from zep_python.external_clients import user as sdk_user
    from zep_python.types import Memory, Message, Session, SessionSearchResponse

from gnomon.adapters import core
from gnomon.adapters.base import (
    BELIEF_KEY,
    MetadataLimits,
    Page,
    StoreBackend,
    StoreItem,
    rendered_value,
)
from gnomon.adapters.base import merged_metadata as _merged
from gnomon.adapters.errors import (
    StoreCallError,
    StoreMetadataError,
)
from gnomon.adapters.fern_errors import FernEdge
from gnomon.adapters.guard import PendingWrite, Screened, fetch_size
from gnomon.adapters.withheld import attach
from gnomon.firewall.model.chain import content_hash

STORE = "zep-legacy"
#: Zep v2 message metadata is a free JSON object; nesting is allowed.
LIMITS = MetadataLimits(max_keys=None, nested=True)
DELETED_KEY = "gnomon_deleted"
#: ``memory.search_sessions``' ``limit`` when the caller gives none (the server's default): the
#: guarded search asks for :func:`~adapters.guard.fetch_size` of it and shows at most this many.
SEARCH_LIMIT = 10
T = TypeVar("T")


# -- errors ----------------------------------------------------------------------------------


#: Turns the SDK's (and httpx's) exceptions into adapter errors naming ``{STORE}.<call>``.
EDGE = FernEdge(
    STORE,
    api_error=ApiError,
    response_errors=(pydantic_v1.ValidationError,),
    reach_hint="check base_url (the server root: the SDK appends /api/v2) and the network",
)


def merged_metadata(call: str, metadata: Any) -> dict[str, Any]:
    checked = _merged(STORE, call, LIMITS, metadata)
    if DELETED_KEY in checked:
        raise StoreMetadataError(
            f"metadata key {DELETED_KEY} is reserved for the firewall", store=STORE, call=call
        )
    return checked


# -- SDK objects -> store items --------------------------------------------------------------


def store_id(session_id: str, uuid: str) -> str:
    return f"{session_id}/{uuid}"


def split_store_id(ident: str) -> tuple[str, str]:
    session, _, uuid = ident.rpartition("/")  # session ids are caller-chosen: uuids have no "/"
    return session, uuid


def deleted(message: Any) -> bool:
    metadata = getattr(message, "metadata", None)
    return isinstance(metadata, dict) and metadata.get(DELETED_KEY) is True


def message_item(message: Any, session_id: str, call: str) -> StoreItem:
    uuid, text = getattr(message, "uuid_", None), getattr(message, "content", None)
    if not isinstance(uuid, str) or not uuid or not isinstance(text, str):
        raise EDGE.malformed(call, "a message with a uuid and content", message)
    metadata = getattr(message, "metadata", None)
    return StoreItem(
        store_id=store_id(session_id, uuid),
        text=text,
        metadata=dict(metadata) if isinstance(metadata, dict) else {},
        scope={"session_id": session_id},
        raw=message,
        rendered=spoken(message),
        text_field="content",
        earlier_hashes=(content_hash(text),),
    )


#: Who said a message (v2: ``role`` is the speaker's name) and its metadata: the binding's
#: hash covers them, so a store edit of either is drift.
SPEAKER_FIELDS = ("role", "role_type", "metadata")
#: Who a message the backend writes says it is from.
WRITER = {"role": "agent", "role_type": "assistant"}


def spoken(message: Any) -> dict[str, str]:
    """Who said a message, and its metadata, as rendered fields (the binding's hash covers
    them)."""
    return {f: rendered_value(getattr(message, f, None)) for f in SPEAKER_FIELDS}


def derived_item(kind: str, uuid: str | None, text: str, session_id: str, raw: Any) -> StoreItem:
    """A fact or summary: no provenance, so it is screened as unbound external content."""
    key = uuid or hashlib.sha256(text.encode()).hexdigest()[:16]
    return StoreItem(store_id=f"{session_id}/{kind}:{key}", text=text, raw=raw)


def annotate(screened: Screened) -> Any:
    raw = screened.item.raw
    if isinstance(raw, pydantic_v1.BaseModel):
        return raw.copy(update={**core.undeclared(raw), **core.tokened(raw), **screened.shown()})
    return raw


def _messages(response: Any, call: str) -> list[Any]:
    messages = getattr(response, "messages", None)
    if messages is None:
        messages = []
    if not isinstance(messages, list):
        raise EDGE.malformed(call, "a list of messages", response)
    return messages


# -- the contract backend --------------------------------------------------------------------


class LegacyZepBackend(StoreBackend):
    """Messages of one session (``scope={"session_id": ...}``) on a sync ``zep_python`` client.

    The v2 API cannot delete or edit a message: :meth:`delete` marks it ``gnomon_deleted`` and
    hides it from :meth:`get`, :meth:`search` and :meth:`list_page`; :meth:`update` is that plus a
    new message (its store id changes).
    """

    name: ClassVar[str] = STORE
    limits: ClassVar[MetadataLimits] = LIMITS

    def __init__(self, client: Zep) -> None:
        self.client = client

    def sent(self, metadata: Mapping[str, Any], scope: Mapping[str, str]) -> dict[str, str]:
        return {k: rendered_value(v) for k, v in WRITER.items()}

    def write(self, text: str, metadata: Mapping[str, Any], scope: Mapping[str, str]) -> StoreItem:
        session, call = scope["session_id"], "memory.add"
        message = Message(**WRITER, content=text, metadata=dict(metadata))
        EDGE.run(call, lambda: self.client.memory.add(session, messages=[message]))
        (item,) = find_written(self.client.memory, session, [dict(metadata)], call)
        return item

    def get(self, store_id: str) -> StoreItem | None:
        session, uuid = split_store_id(store_id)
        call = "memory.get_session_message"
        try:
            message = EDGE.run(call, lambda: self.client.memory.get_session_message(session, uuid))
        except StoreCallError as exc:
            if exc.status == 404:
                return None
            raise
        return None if deleted(message) else message_item(message, session, call)

    def search(self, query: str, *, limit: int, scope: Mapping[str, str]) -> list[StoreItem]:
        session, call = scope["session_id"], "memory.search_sessions"
        response = EDGE.run(
            call,
            lambda: self.client.memory.search_sessions(
                text=query, session_ids=[session], search_scope="messages", limit=limit
            ),
        )
        results = getattr(response, "results", None) or []
        messages = [r.message for r in results if getattr(r, "message", None) is not None]
        return [message_item(m, session, call) for m in messages if not deleted(m)][:limit]

    def list_page(
        self, *, scope: Mapping[str, str], cursor: str | None = None, limit: int = 100
    ) -> Page:
        session, call = scope["session_id"], "memory.get_session_messages"
        page = int(cursor or 1)
        response = EDGE.run(
            call,
            lambda: self.client.memory.get_session_messages(session, limit=limit, cursor=page),
        )
        messages = _messages(response, call)
        items = [message_item(m, session, call) for m in messages if not deleted(m)]
        total = getattr(response, "total_count", None)
        more = isinstance(total, int) and page * limit < total
        return Page(items, str(page + 1) if more else None)

    def update(self, store_id: str, *, text: str, metadata: Mapping[str, Any]) -> StoreItem:
        session, _ = split_store_id(store_id)
        self.delete(store_id)
        return self.write(text, metadata, {"session_id": session})

    def delete(self, store_id: str) -> None:
        session, uuid = split_store_id(store_id)
        EDGE.run(
            "memory.update_message_metadata",
            lambda: self.client.memory.update_message_metadata(
                session, uuid, metadata={DELETED_KEY: True}
            ),
        )


def find_written(
    memory_client: Any, session: str, metadatas: Sequence[Mapping[str, Any]], call: str
) -> list[StoreItem]:
    """The messages just added, found by the belief id the firewall put in their metadata."""
    lastn = max(len(metadatas), 1) * 2
    memory = EDGE.run(call, lambda: memory_client.get(session, lastn=lastn))
    by_belief = {}
    for message in _messages(memory, call):
        metadata = getattr(message, "metadata", None) or {}
        if isinstance(metadata, dict) and BELIEF_KEY in metadata:
            by_belief[metadata[BELIEF_KEY]] = message
    out = []
    for metadata in metadatas:
        message = by_belief.get(metadata.get(BELIEF_KEY))
        if message is None:
            raise EDGE.malformed(call, "the added message in the session's last messages", memory)
        out.append(message_item(message, session, call))
    return out


# -- the guarded client ----------------------------------------------------------------------


class _Core(core.Core):
    def annotate(self, screened: Screened) -> Any:
        return annotate(screened)  # zep-python's models are pydantic v1

    def copied(self, model: Any, update: Mapping[str, Any]) -> Any:
        return model.copy(update=update)


#: A session's and a user's free-form fields: the store's text with no label or binding
#: (an LLM's classifications of a session, the caller's metadata), never returned.
SESSION_FREE_TEXT = ("metadata", "classifications")
USER_FREE_TEXT = ("metadata",)


class _Refusing(core.Resource):
    _store = STORE
    _converted = staticmethod(EDGE.converted)


class LegacyMemory(_Refusing):
    _path = "memory."
    _SDK = (sdk_memory.MemoryClient, None)

    # containers
    add_session = core.container(*SESSION_FREE_TEXT)

    @core.guarded
    def get_session(self, a: core.Args) -> core.Flow:
        """The session (a container: see :meth:`Core.container`), its ``facts`` (memory text
        Zep derived) screened as the facts of :meth:`get` are: only those that pass, as plain
        text."""
        found = yield a.raw()
        if not isinstance(found, Session):
            raise EDGE.malformed(a.name, "a Session", found)
        found = self._core.container(found, SESSION_FREE_TEXT, skip=("facts",))
        facts = [f for f in found.facts or [] if isinstance(f, str)]
        if not facts:
            return found.copy(update={"facts": None}) if found.facts else found
        session = a["session_id"]
        items = [derived_item("fact", None, f, session, f) for f in facts]
        hits = self._core.screen(items, a.name)
        kept = found.copy(update={"facts": [s.item.text for s in hits if s.passed]})
        return attach(kept, {**hits.summary, **getattr(found, "gnomon", {})})

    # writes

    @core.guarded(extras=core.WRITE)
    def add(self, a: core.Args) -> core.Flow:
        """Each message recorded with the label its ``role_type`` gives (the host's user
        channel for ``user``), sent with the firewall's keys, then found again by belief id."""
        messages, session = a["messages"], a["session_id"]
        if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
            raise StoreCallError("messages must be a list of Message", store=STORE, call=a.name)
        parsed = [m if isinstance(m, Message) else Message.parse_obj(m) for m in messages]
        for m in parsed:  # refuse bad metadata or content before recording any message
            merged_metadata(a.name, m.metadata)
            if not isinstance(m.content, str):
                raise StoreCallError("message content must be a string", store=STORE, call=a.name)
        guard = self._core.guard
        pendings: list[PendingWrite] = [
            guard.begin_write(
                m.content or "",
                merged_metadata(a.name, m.metadata),
                origin=a.origin
                if a.origin is not None
                else guard.message_origin(m.role_type, m.role),
                rendered=spoken(m),
            )
            for m in parsed
        ]
        sent = [
            m.copy(update={"metadata": p.metadata, "content": p.text})
            for m, p in zip(parsed, pendings, strict=True)
        ]
        metadatas = [p.metadata for p in pendings]
        with guard.writing(pendings, a.name):
            result = yield a.raw(messages=sent)
            items = yield core.Call(
                a.name, lambda: find_written(self._raw, session, metadatas, a.name)
            )
        for pending, item in zip(pendings, items, strict=True):
            guard.confirm_write(pending, item.store_id, stored=item)
        return result

    @core.guarded
    def update_message_metadata(self, a: core.Args) -> core.Flow:
        """Passed through for a message the firewall has not seen, the firewall's ``gnomon_*``
        keys refused. A message it holds a binding for is refused: its binding's hash covers
        its metadata, so the edit would make a memory read back as drifted."""
        merged_metadata(a.name, a["metadata"])
        if self._core.guard.bound(store_id(a["session_id"], a["message_uuid"])) is not None:
            raise StoreCallError(
                "a message the firewall holds is not edited in place: its metadata is part of "
                "what its binding attests; add a new message instead",
                store=STORE,
                call=a.name,
            )
        return (yield a.raw())

    # reads

    @core.guarded
    def get(self, a: core.Args) -> core.Flow:
        """The session's memory rebuilt from the messages, facts and summary that pass."""
        session = a["session_id"]
        memory = yield a.raw()
        if not isinstance(memory, Memory):
            raise EDGE.malformed(a.name, "a Memory", memory)
        items = [message_item(m, session, a.name) for m in _messages(memory, a.name)]
        items = [i for i in items if not deleted(i.raw)]
        for fact in memory.relevant_facts or []:
            if isinstance(fact.fact, str):
                items.append(derived_item("fact", fact.uuid_, fact.fact, session, fact))
        for text in memory.facts or []:
            if isinstance(text, str):
                items.append(derived_item("fact", None, text, session, text))
        summary = memory.summary
        if summary is not None and isinstance(summary.content, str):
            items.append(derived_item("summary", summary.uuid_, summary.content, session, summary))
        hits = self._core.screen(items, a.name)
        passed = [s for s in hits if s.passed]
        kept = {id(s.item.raw): annotate(s) for s in passed}
        rebuilt = memory.copy(
            update={
                **core.undeclared(memory),
                "messages": [kept[id(m)] for m in memory.messages or [] if id(m) in kept],
                "relevant_facts": [
                    kept[id(f)] for f in memory.relevant_facts or [] if id(f) in kept
                ],
                "facts": [s.item.text for s in passed if s.item.raw.__class__ is str],
                "summary": kept.get(id(summary)) if summary is not None else None,
                "metadata": None,  # the store's free text about the memory: no label to screen
            }
        )
        return attach(rebuilt, hits.summary)

    @core.guarded
    def search_sessions(self, a: core.Args) -> core.Flow:
        """Only results with a part (message, fact, summary) that passes the screen, holding only
        the parts that passed: a part the screen did not pass is never returned (no raw text).
        Over-fetched (:func:`~adapters.guard.fetch_size` of the caller's ``limit``): at most
        ``limit`` parts are shown, trusted first, so look-alike writes cannot crowd a trusted
        memory out of the results."""
        given = a.get("limit")
        k = given if isinstance(given, int) and given > 0 else SEARCH_LIMIT
        response = yield a.raw(limit=fetch_size(k))
        if not isinstance(response, SessionSearchResponse):
            raise EDGE.malformed(a.name, "a SessionSearchResponse", response)
        results = list(response.results or [])
        parts: list[tuple[int, str, StoreItem]] = []
        for n, result in enumerate(results):
            session = result.session_id or ""
            if result.message is not None and not deleted(result.message):
                parts.append((n, "message", message_item(result.message, session, a.name)))
            fact = result.fact
            if fact is not None and isinstance(fact.fact, str):
                parts.append(
                    (n, "fact", derived_item("fact", fact.uuid_, fact.fact, session, fact))
                )
            s = result.summary
            if s is not None and isinstance(s.content, str):
                parts.append(
                    (n, "summary", derived_item("summary", s.uuid_, s.content, session, s))
                )
        query = a.get("text") or a.name
        screened = self._core.screen([item for _, _, item in parts], query, limit=k)
        where = {id(item): (n, field) for n, field, item in parts}
        shown: dict[int, dict[str, Any]] = {}  # in the screen's order: trusted first
        for one in screened:
            if one.passed:
                n, field = where[id(one.item)]
                shown.setdefault(n, {})[field] = annotate(one)
        kept = [
            results[n].copy(update={**core.undeclared(results[n]), **_EMPTY_RESULT, **fields})
            for n, fields in shown.items()
        ]
        rebuilt = response.copy(update={**core.undeclared(response), "results": kept})
        return attach(rebuilt, screened.summary)

    @core.guarded
    def get_session_messages(self, a: core.Args) -> core.Flow:
        session = a["session_id"]
        response = yield a.raw()
        items = [message_item(m, session, a.name) for m in _messages(response, a.name)]
        kept = self._core.passed([i for i in items if not deleted(i.raw)], a.name)
        rebuilt = response.copy(update={**core.undeclared(response), "messages": list(kept)})
        return attach(rebuilt, kept.gnomon)


#: A search result's parts, each set again only where it passed the screen.
_EMPTY_RESULT = {"message": None, "fact": None, "summary": None}


class LegacyUser(_Refusing):
    """Containers (no memory text): screened as :meth:`Core.container` screens them."""

    _path = "user."
    _SDK = (sdk_user.UserClient, None)

    add = core.container(*USER_FREE_TEXT)
    get = core.container(*USER_FREE_TEXT)


class GuardedLegacyZep(core.GuardedClient):
    """A ``zep_python.client.Zep`` (2.x) behind the firewall (see the module docstring).

    ``gnomon_origin=`` on ``memory.add`` (host code only) records it with an explicit origin;
    ``user_channel=`` labels role_type=user messages as the host's user's. ``zep.gnomon`` is
    the store-independent :class:`~adapters.adapter.Adapter` over a session's messages (audit,
    import, export, sync with ``scope={"session_id": ...}``).
    """

    _store = STORE
    _SDK = (Zep, None)
    _Core = _Core
    _client_hint = "construct it as Zep(base_url='http://host:8000', api_key=...)"
    _children = core.children(LegacyMemory, LegacyUser)

    def _backend(self, client: Zep) -> LegacyZepBackend:
        return LegacyZepBackend(client)


__all__ = ["GuardedLegacyZep", "LegacyZepBackend"]
