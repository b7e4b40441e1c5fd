"""``gnomon init`` and ``gnomon db``: creating a store, and schema management for server-backed
stores (PostgreSQL).

``gnomon init`` creates the store the URL names (default ``$GNOMON_URL``, else ``gnomon.db`` in
the user's data directory, the store every other command opens by default): a SQLite file with its
folder, or a PostgreSQL schema (the same as ``gnomon db upgrade``). The file is owner-only (0600)
and a folder it creates is owner-only (0700); the data directory itself is made owner-only, since
it also holds the keys. It is idempotent: an existing store is left as it is and reported (its
mode is tightened to 0600).

``gnomon db upgrade`` applies every pending migration to the database the URL names, each in its
own transaction, under an advisory lock so two operators (or a deploy and a running agent) cannot
apply one twice. A store refuses to open an older schema, so this is the one step an operator runs
after upgrading gnomon. SQLite files need no such step and are refused with a hint.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from gnomon.firewall.cli.common import console, echo_json, resolve_url, say, store_options
from gnomon.firewall.host import config
from gnomon.firewall.model.errors import StoreError, UnsupportedURLError
from gnomon.firewall.store.paths import data_dir, private_dir, private_file
from gnomon.firewall.store.registry import POSTGRES_SCHEMES, open_store


def _target(ctx: click.Context, url: str | None) -> tuple[str, str]:
    """The URL of the store a command creates or migrates (it need not exist yet), and its
    scheme."""
    chosen = resolve_url(ctx, url, must_exist=False)
    return chosen, chosen.partition("://")[0].lower()


@click.command("init")
@store_options
def init(ctx: click.Context, url: str | None, as_json: bool) -> None:
    """Create the store (default: $GNOMON_URL, else gnomon.db in the user data directory)."""
    chosen, scheme = _target(ctx, url)
    if scheme == "memory":
        raise UnsupportedURLError(
            "a memory:// store lives only as long as the process that opened it: there is "
            "nothing to create",
            hint="use a sqlite:///PATH or postgresql:// URL",
        )
    if scheme in POSTGRES_SCHEMES:
        database, version, applied = _postgres().upgrade_url(chosen)
        data = {
            "url": chosen,
            "created": bool(applied),
            "schema_version": version,
            "database": database,
            "events": None,
        }
    else:
        path = config.sqlite_path(chosen)
        existed = path is not None and path.exists() and path.stat().st_size > 0
        if path is not None:
            try:
                if path.absolute().is_relative_to(data_dir().absolute()):
                    private_dir(data_dir())
                private_file(path)
            except OSError as exc:
                raise StoreError(
                    f"cannot create {path}: {exc.strerror or exc}",
                    hint="choose a --url in a directory you can write to (or set $GNOMON_HOME)",
                ) from exc
        with open_store(chosen) as store:
            events = store.head()[0]
        data = {
            "url": chosen,
            "created": not existed,
            "path": str(path.resolve()) if path else None,
            "events": events,
        }
    if as_json:
        echo_json(data)
        return
    state = "created" if data["created"] else "already exists"
    count = f", {data['events']} events" if data["events"] is not None else ""
    say(f"ok: store {chosen} {state}{count}")
    say(
        "next: `gnomon doctor` checks where it lives and who can write it; "
        "`gnomon beliefs list`, `gnomon sessions list` (they open it by default), or "
        f'firewall.open("{chosen}") from Python; `gnomon demo` uses its own store'
    )


@click.group()
def db() -> None:
    """Database schema management (PostgreSQL stores)."""


@db.command("upgrade")
@store_options
def db_upgrade(ctx: click.Context, url: str | None, as_json: bool) -> None:
    """Create or migrate the Gnomon schema of a postgresql:// store to this version."""
    chosen, scheme = _target(ctx, url)
    if scheme not in POSTGRES_SCHEMES:
        raise UnsupportedURLError(
            f"`gnomon db upgrade` manages PostgreSQL schemas; {scheme or 'this'}:// stores "
            "create their schema when they are opened",
            hint="pass --url postgresql://USER@HOST:PORT/DBNAME (or set $GNOMON_URL)",
        )
    backend = _postgres()
    database, version, applied = backend.upgrade_url(chosen)
    if as_json:
        echo_json(
            {
                "database": database,
                "schema_version": version,
                "applied": [{"version": m.version, "name": m.name} for m in applied],
            }
        )
        return
    out = console()
    for migration in applied:
        out.print(f"applied {migration.version}: {migration.name}", markup=False)
    state = "upgraded to" if applied else "already at"
    say(f"ok: {database} {state} schema version {version}")


def _postgres() -> Any:
    try:
        return importlib.import_module("gnomon.firewall.store.postgres")
    except ImportError as exc:
        raise UnsupportedURLError(
            "PostgreSQL support is not installed",
            hint="install it with `pip install 'gnomon[postgres]'`",
        ) from exc


__all__ = ["db", "init"]
