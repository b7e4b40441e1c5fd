"""``gnomon db``: schema management for server-backed stores (PostgreSQL).

``gnomon db upgrade`` applies every pending migration to the database the URL names, each in its
own transaction, under an advisory lock so two operators (or a deploy and a running agent) cannot
apply one twice. A store refuses to open an older schema, so this is the one step an operator runs
after upgrading gnomon. SQLite files need no such step and are refused with a hint.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from firewall.cli.common import console, echo_json, json_option, resolve_url, url_option
from firewall.errors import UnsupportedURLError


@click.group()
def db() -> None:
    """Database schema management (PostgreSQL stores)."""


@db.command("upgrade")
@url_option
@json_option
@click.pass_context
def db_upgrade(ctx: click.Context, url: str | None, as_json: bool) -> None:
    """Create or migrate the Gnomon schema of a postgresql:// store to this version."""
    chosen = resolve_url(ctx, url, must_exist=False)
    scheme = chosen.partition("://")[0].lower()
    if scheme not in ("postgresql", "postgres"):
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
    out.print(f"ok: {database} {state} schema version {version}", markup=False, soft_wrap=True)


def _postgres() -> Any:
    try:
        return importlib.import_module("firewall.store.postgres")
    except ImportError as exc:
        raise UnsupportedURLError(
            "PostgreSQL support is not installed",
            hint="install it with `pip install 'gnomon[postgres]'`",
        ) from exc


__all__ = ["db"]
