"""Open a store from a URL: the one place that maps URL schemes to backends.

>>> store = open_store("memory://")
>>> type(store).__name__
'MemoryStore'
>>> store.close()

``sqlite:///`` is followed by the file path exactly as written: ``sqlite:///./x.db`` and
``sqlite:///x.db`` are relative to the working directory, ``sqlite:////abs/x.db`` is absolute and
``sqlite:///:memory:`` is a private in-memory database. ``memory:///log.ndjson`` (same path
rules) is the in-process store with its event log kept in an NDJSON file. PostgreSQL needs the
``postgres`` extra.
"""

from __future__ import annotations

import importlib
import inspect
import os
from pathlib import Path
from typing import Any

from gnomon.firewall.model.errors import InputError, UnsupportedURLError
from gnomon.firewall.store.base import Store
from gnomon.firewall.store.paths import store_file

#: The URL schemes of the PostgreSQL backend.
POSTGRES_SCHEMES = ("postgresql", "postgres")
SUPPORTED = ("memory://", "memory:///<log.ndjson>", "sqlite:///<path>", "postgresql://<dsn>")


def default_url() -> str:
    """``$GNOMON_URL`` if set, else the embedded default: a SQLite file in the user's data
    directory (:func:`~firewall.store.paths.store_file`), never the working tree an agent edits.
    """
    return os.environ.get("GNOMON_URL") or sqlite_url(store_file())


def sqlite_url(path: Path) -> str:
    """The ``sqlite:///`` URL of a file, absolute so it means the same from any directory.

    >>> sqlite_url(Path("/var/lib/gnomon/gnomon.db"))
    'sqlite:////var/lib/gnomon/gnomon.db'
    """
    return f"sqlite:///{path.absolute()}"


def open_store(url: str, **options: Any) -> Store:
    """Open the store ``url`` names; ``options`` go to the backend (e.g. ``busy_timeout``)."""
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep:
        scheme = ""
    if scheme == "memory":
        if rest.startswith("/") and len(rest) > 1:
            # memory:///path: the in-process store with an NDJSON file as its event log
            from gnomon.firewall.store.ndjson_file import FileLogStore

            return FileLogStore(rest[1:], url=url)
        from gnomon.firewall.store.memory import MemoryStore

        return MemoryStore(url)  # nothing to tune: options are for persistent backends
    if scheme == "sqlite":
        if not rest.startswith("/") or len(rest) < 2:
            raise UnsupportedURLError(
                f"SQLite URL {url!r} has no file path",
                hint="write sqlite:///relative/path.db, sqlite:////absolute/path.db "
                "or sqlite:///:memory:",
            )
        from gnomon.firewall.store.sqlite import SQLiteStore

        return SQLiteStore(rest[1:], url=url, **_options_of(SQLiteStore, url, options))
    if scheme in POSTGRES_SCHEMES:
        try:
            backend = importlib.import_module("gnomon.firewall.store.postgres")
        except ImportError as exc:
            raise UnsupportedURLError(
                f"cannot open {_redact(url)}: PostgreSQL support is not installed",
                hint="PostgreSQL support arrives with `pip install 'gnomon[postgres]'`",
            ) from exc
        options = _options_of(backend.PostgresStore, url, options)
        store: Store = backend.PostgresStore(url, **options)
        return store
    raise UnsupportedURLError(
        f"no store backend for URL {_redact(url)!r}; supported: {', '.join(SUPPORTED)}",
        hint=f"use one of the supported schemes, e.g. {sqlite_url(store_file())}",
    )


def _options_of(backend: type[Store], url: str, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` if ``backend`` takes every one of them as a keyword, else an
    :class:`InputError` naming the ones it does not take (a typo must not be a raw TypeError
    from deep inside, nor silently ignored)."""
    takes = [
        p.name
        for p in inspect.signature(backend).parameters.values()
        if p.kind is p.KEYWORD_ONLY and p.name != "url"
    ]
    unknown = sorted(set(options) - set(takes))
    if unknown:
        raise InputError(
            f"{backend.__name__} ({_redact(url)}) takes no option {', '.join(map(repr, unknown))}",
            hint=f"its options are {', '.join(takes)}",
        )
    return options


def _redact(url: str) -> str:
    """Hide a password in ``scheme://user:password@host`` before it reaches a message."""
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    if sep and at and ":" in credentials:
        user = credentials.split(":", 1)[0]
        return f"{scheme}://{user}:***@{host}"
    return url


__all__ = ["POSTGRES_SCHEMES", "default_url", "open_store", "sqlite_url"]
