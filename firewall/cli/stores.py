"""``gnomon import | export | sync STORE``: what a live mem0, Letta or Zep store holds, through
the firewall (:mod:`adapters.transfer`).

* ``import`` walks the store and brings every item in, unverified and restricted, bound to its
  store id and content hash; a second run imports nothing (idempotent). A progress bar is drawn on
  stderr when it is a terminal.
* ``export`` writes every belief bound to the store, with its labels and binding, as JSON lines
  (``--out FILE``, default stdout). It reads the firewall only: no connection to the store.
* ``sync`` compares the store with the bindings and records every edit made around the firewall:
  unbound items (written around it), drifted items (text no longer matches its hash: suspicious,
  never trusted again) and deleted items. It exits with status 3 when it found any.

Each store is one :class:`StoreSpec` in :data:`STORES`: its options and how to open its client.
The SDK is imported only when the command runs, so a missing SDK ends in the adapter's
:class:`~adapters.errors.MissingSDKError` (``pip install 'gnomon[letta]'``), exit status 1.

Testing hook: ``GNOMON_STORE_CLIENT=module:function`` makes the commands call
``function(store, options)`` for the SDK client instead of building it from the options (the
test suite points it at the in-process fake Letta and Zep servers). It is not meant for
production use.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gnomon import firewall
from gnomon.firewall.cli.common import (
    EXIT_ERROR,
    EXIT_FINDINGS,
    echo,
    echo_json,
    json_option,
    read_grant,
    resolve_trusted_keys,
    resolve_url,
    say,
    staged_file,
    url_option,
)
from gnomon.firewall.host import config
from gnomon.firewall.model.errors import InputError

if TYPE_CHECKING:
    from gnomon.adapters.adapter import Adapter
    from gnomon.firewall.gate.grants import Grant
    from gnomon.firewall.host.firewall import Firewall

CLI_ACTOR = "cli"
#: ``module:function`` returning the SDK client, called as ``function(store, options)``.
CLIENT_HOOK = "GNOMON_STORE_CLIENT"
#: Exit status of ``gnomon sync`` when it found edits made around the firewall.
DRIFT_EXIT = EXIT_FINDINGS

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


@dataclass
class Connected:
    """An adapter over a live client, the scope to walk, and how to release the client."""

    adapter: Adapter
    scope: dict[str, str]
    close: Callable[[], None] = field(default=lambda: None)


@dataclass(frozen=True)
class StoreSpec:
    """One store the commands know: its options and how to connect."""

    name: str
    title: str
    options: tuple[Decorator, ...]
    connect: Callable[[Firewall, str, dict[str, Any]], Connected]


def hooked_client(store: str, options: Mapping[str, Any]) -> Any:
    """The client from the ``GNOMON_STORE_CLIENT`` testing hook, or None when it is unset."""
    target = os.environ.get(CLIENT_HOOK)
    if not target:
        return None
    module, _, name = target.partition(":")
    if not module or not name:
        raise InputError(
            f"{CLIENT_HOOK}={target!r} is not module:function",
            hint=f"unset {CLIENT_HOOK}; it is a testing hook",
        )
    return getattr(importlib.import_module(module), name)(store, dict(options))


_PACKAGES = {"mem0": "mem0ai", "letta": "letta-client", "zep": "zep-cloud"}


def _sdk(store: str, module: str, name: str) -> Any:
    """``module.name`` from the store's SDK, or the adapter's MissingSDKError."""
    from gnomon.adapters.errors import MissingSDKError

    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as exc:
        raise MissingSDKError(store, store, _PACKAGES[store]) from exc


# -- mem0 -------------------------------------------------------------------------------------


def _load_mapping(path: str) -> dict[str, Any]:
    import yaml

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the mem0 config {path}: {exc}") from exc
    try:
        data = yaml.safe_load(text) if path.endswith((".yaml", ".yml")) else json.loads(text)
    except (ValueError, yaml.YAMLError) as exc:  # JSONDecodeError is a ValueError
        kind = "YAML" if path.endswith((".yaml", ".yml")) else "JSON"
        raise InputError(
            f"{path}: not valid {kind}: {_one_line(exc)}",
            hint="a mem0 config is a Memory.from_config mapping, e.g. vector_store, llm, embedder",
        ) from exc
    if not isinstance(data, dict):
        raise InputError(f"{path}: a mem0 config must be a mapping, got {type(data).__name__}")
    return data


def mem0_telemetry_off() -> None:
    """mem0 reads ``MEM0_TELEMETRY`` when it is first imported: set it off before that,
    whatever the environment says, and off in the modules already loaded (a command that walks
    a whole store must not report usage to a third party)."""
    os.environ["MEM0_TELEMETRY"] = "false"
    for name in ("mem0.memory.telemetry", "mem0.memory.main"):
        module = sys.modules.get(name)
        if module is not None and hasattr(module, "MEM0_TELEMETRY"):
            module.MEM0_TELEMETRY = False  # type: ignore[attr-defined]


def _mem0_connect(wall: Firewall, project: str, opts: dict[str, Any]) -> Connected:
    mem0_telemetry_off()
    from gnomon.adapters.mem0_backend import adapter_for

    scope = {
        key: opts[key] for key in ("user_id", "agent_id", "run_id") if opts.get(key) is not None
    }
    if not scope:
        raise InputError(
            "mem0 needs a scope", hint="pass --user-id, --agent-id or --run-id (or several)"
        )
    client = hooked_client("mem0", opts)
    platform = False
    if client is None and opts.get("mem0_config"):
        Memory = _sdk("mem0", "mem0", "Memory")
        client = _mem0_from_config(Memory, opts["mem0_config"])
        if opts.get("mem0_embedder") == "hash":
            from gnomon.adapters.testing import HashEmbedder

            dims = client.config.vector_store.config.embedding_model_dims
            client.embedding_model = HashEmbedder(dims)
    elif client is None:
        MemoryClient = _sdk("mem0", "mem0", "MemoryClient")
        api_key = opts.get("mem0_api_key")
        if not api_key:
            raise InputError(
                "mem0 needs --mem0-config FILE (open-source Memory) or --mem0-api-key "
                "(platform; or $MEM0_API_KEY)"
            )
        client = _mem0_platform(MemoryClient, api_key, opts.get("mem0_host"))
        platform = True
    else:
        platform = type(client).__name__ == "MemoryClient"
    adapter = adapter_for(
        client,
        wall,
        platform=platform,
        project=project,
        actor=CLI_ACTOR,
        user=None,
        session=None,
        policy="default",
    )
    return Connected(adapter, scope, lambda: _close_mem0(client))


def _mem0_from_config(Memory: Any, path: str) -> Any:
    """``Memory.from_config`` of the file: mem0 raises whatever its providers raise (pydantic,
    ValueError, an LLM SDK's missing-credentials error) for a config it cannot build, and all of
    it is a bad config file here."""
    from pydantic import ValidationError

    from gnomon.adapters.errors import AdapterError

    mapping = _load_mapping(path)
    try:
        # mem0 prints its own validation report: keep stdout for the command's output (--json)
        with contextlib.redirect_stdout(sys.stderr):
            return Memory.from_config(mapping)
    except Exception as exc:
        detail = (
            "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            if isinstance(exc, ValidationError)
            else f"{type(exc).__name__}: {_one_line(exc)}"
        )
        raise AdapterError(
            f"cannot build Memory from {path}: {detail}",
            store="mem0",
            call="Memory.from_config",
            hint="check the config's providers (llm, embedder, vector_store) and their "
            "credentials; see mem0's configuration docs",
        ) from exc


def _one_line(exc: BaseException, limit: int = 300) -> str:
    """A third-party message on one line (an error line must not spill over the screen)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _mem0_platform(MemoryClient: Any, api_key: str, host: str | None) -> Any:
    """The platform client: its constructor calls the host to check the key."""
    import httpx

    from gnomon.adapters.errors import StoreCallError

    where = host or "the mem0 platform"
    try:
        return MemoryClient(api_key=api_key, host=host)
    except httpx.HTTPError as exc:
        raise StoreCallError(
            f"could not reach {where}: {exc}",
            store="mem0",
            call="MemoryClient",
            hint="check --mem0-host and the network",
        ) from exc
    except ValueError as exc:  # mem0's answer to a refused or missing key
        raise StoreCallError(
            f"{where} refused the API key: {exc}",
            store="mem0",
            call="MemoryClient",
            hint="check --mem0-api-key / $MEM0_API_KEY",
        ) from exc


def _close_mem0(client: Any) -> None:
    """Release an embedded vector store (local qdrant locks its folder until closed)."""
    inner = getattr(getattr(client, "vector_store", None), "client", None)
    close = getattr(inner, "close", None)
    if callable(close):
        close()


MEM0_OPTIONS: tuple[Decorator, ...] = (
    click.option(
        "--mem0-config",
        type=click.Path(exists=True, dir_okay=False),
        default=None,
        help="JSON or YAML file holding a Memory.from_config dict (open-source mem0).",
    ),
    click.option(
        "--mem0-embedder",
        type=click.Choice(["config", "hash"]),
        default="config",
        show_default=True,
        help="'hash' replaces the configured embedder with the offline, deterministic "
        "gnomon.adapters.testing.HashEmbedder (tests and demos: not a semantic embedder).",
    ),
    click.option(
        "--mem0-api-key",
        envvar="MEM0_API_KEY",
        default=None,
        help="Platform API key ($MEM0_API_KEY); used when no --mem0-config is given.",
    ),
    click.option("--mem0-host", default=None, help="Platform host (default: mem0's)."),
    click.option("--user-id", default=None, help="mem0 scope: user_id."),
    click.option("--agent-id", default=None, help="mem0 scope: agent_id."),
    click.option("--run-id", default=None, help="mem0 scope: run_id."),
)


# -- Letta ------------------------------------------------------------------------------------


def _letta_connect(wall: Firewall, project: str, opts: dict[str, Any]) -> Connected:
    from gnomon.adapters.letta import GuardedLetta

    scope = {
        key: opts[key] for key in ("agent_id", "archive_id", "label") if opts.get(key) is not None
    }
    if not scope or ("archive_id" in scope and len(scope) > 1):
        raise InputError(
            "Letta needs one of --agent-id (archival passages), --agent-id with --label (a "
            "core-memory block), --archive-id (archive passages) or --label (standalone blocks)"
        )
    client = hooked_client("letta", opts)
    if client is None:
        Letta = _sdk("letta", "letta_client", "Letta")
        client = Letta(base_url=opts.get("base_url"), api_key=opts.get("api_key"))
    guarded = GuardedLetta(client, wall, project=project, actor=CLI_ACTOR)
    return Connected(guarded.gnomon, scope)


LETTA_OPTIONS: tuple[Decorator, ...] = (
    click.option(
        "--base-url", envvar="LETTA_BASE_URL", default=None, help="Letta server ($LETTA_BASE_URL)."
    ),
    click.option("--api-key", envvar="LETTA_API_KEY", default=None, help="($LETTA_API_KEY)."),
    click.option(
        "--agent-id",
        default=None,
        help="An agent's archival passages (with --label: its core-memory block of that label).",
    ),
    click.option("--archive-id", default=None, help="An archive's passages."),
    click.option("--label", default=None, help="Standalone blocks of this label."),
)


# -- Zep --------------------------------------------------------------------------------------


def _zep_connect(wall: Firewall, project: str, opts: dict[str, Any]) -> Connected:
    from gnomon.adapters.zep import GuardedZep

    client = hooked_client("zep", opts)
    if client is None:
        Zep = _sdk("zep", "zep_cloud.client", "Zep")
        if not opts.get("api_key"):
            raise InputError("Zep needs an API key", hint="pass --api-key or set $ZEP_API_KEY")
        kwargs = {"base_url": opts["base_url"]} if opts.get("base_url") else {}
        client = Zep(api_key=opts["api_key"], **kwargs)
    guarded = GuardedZep(client, wall, project=project, actor=CLI_ACTOR)
    return Connected(guarded.gnomon, {"graph_uuid": opts["graph_uuid"]})


ZEP_OPTIONS: tuple[Decorator, ...] = (
    click.option(
        "--base-url",
        envvar="ZEP_BASE_URL",
        default=None,
        help="Zep API URL ($ZEP_BASE_URL; default: Zep Cloud).",
    ),
    click.option("--api-key", envvar="ZEP_API_KEY", default=None, help="($ZEP_API_KEY)."),
    click.option("--graph-uuid", required=True, help="The graph whose episodes to walk."),
)


#: The stores the commands know; adding one is one entry here.
STORES: dict[str, StoreSpec] = {
    spec.name: spec
    for spec in (
        StoreSpec("mem0", "mem0 (Memory or MemoryClient)", MEM0_OPTIONS, _mem0_connect),
        StoreSpec("letta", "Letta (blocks and passages)", LETTA_OPTIONS, _letta_connect),
        StoreSpec("zep", "Zep (graph episodes)", ZEP_OPTIONS, _zep_connect),
    )
}


# -- the commands -----------------------------------------------------------------------------


def _project_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--project", required=True, help="The Gnomon project the store's items belong to."
    )(f)


def with_options(options: tuple[Decorator, ...], f: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(options):
        f = option(f)
    return f


_ADOPT_OPTIONS: tuple[Decorator, ...] = (
    click.option(
        "--adopt-as",
        "adopt_as",
        type=click.Choice(["user"]),
        default=None,
        help="Adopt the imported memories as stated by a user (needs --grant).",
    ),
    click.option(
        "--grant",
        "grant_file",
        type=click.Path(dir_okay=False),
        default=None,
        help="A store-scoped user grant (gnomon keys grant ... --store STORE --out FILE).",
    ),
)


def _adoption_grant(adopt_as: str | None, grant_file: str | None) -> Grant | None:
    if adopt_as is None and grant_file is None:
        return None
    if adopt_as is None or grant_file is None:
        raise InputError(
            "--adopt-as and --grant go together",
            hint="pass --adopt-as user --grant FILE (gnomon keys grant writes FILE)",
        )
    grant = read_grant(grant_file)
    if grant.authority.value != adopt_as:
        raise InputError(
            f"the grant carries {grant.authority.value!r} authority, not {adopt_as!r}",
            hint="issue a user grant with gnomon keys grant",
        )
    return grant


def _import_command(spec: StoreSpec) -> click.Command:
    @click.pass_context
    def run(
        ctx: click.Context,
        /,
        url: str | None,
        project: str,
        as_json: bool,
        adopt_as: str | None,
        grant_file: str | None,
        **opts: Any,
    ) -> None:
        grant = _adoption_grant(adopt_as, grant_file)
        pinned = config.pinned_keys(resolve_trusted_keys(ctx, None)) if grant is not None else None
        with firewall.open(resolve_url(ctx, url, must_exist=False), trusted_keys=pinned) as wall:
            conn = spec.connect(wall, project, opts)
            try:
                report = conn.adapter.import_(
                    conn.scope
                )  # the connection's session is in `project`
            finally:
                conn.adapter.close()
                conn.close()
            adopted = None
            if grant is not None:
                from gnomon.firewall.host.store_adoption import adopt_store

                adopted = adopt_store(
                    wall,
                    spec.name,
                    grant=grant,
                    reason=f"gnomon import {spec.name} --adopt-as {adopt_as}",
                )
        data: dict[str, Any] = {
            "store": spec.name,
            "scope": conn.scope,
            "seen": report.seen,
            "imported": report.imported,
            "skipped": report.skipped,
        }
        if adopted is not None:
            data["adopted"] = adopted.adopted
            data["grant_id"] = adopted.grant_id
            data["not_adopted"] = adopted.not_adopted
        from gnomon.firewall.host.store_adoption import adoption_failed

        failed = adopted is not None and adoption_failed(adopted)
        if as_json:
            echo_json(data)
        else:
            state = (
                f"adopted as {adopt_as} on grant {adopted.grant_id} ({adopted.adopted} promoted)"
                if adopted is not None
                else "unverified and restricted (adopt them with --adopt-as user --grant FILE)"
            )
            say(
                f"{spec.name}: imported {report.imported} of {report.seen} items "
                f"({report.skipped} already imported) into project {project}, {state}"
            )
            for why, count in (adopted.not_adopted if adopted is not None else {}).items():
                say(f"  not adopted: {count} ({why})")
        if failed and adopted is not None:
            echo(
                f"error: nothing was adopted from {spec.name} in project {project}: "
                + (", ".join(f"{n} {w}" for w, n in adopted.not_adopted.items()) or "it is empty")
                + "\nhint: check --project and the store's scope options; memories written "
                "around the firewall after an import are never adopted",
                err=True,
            )
            ctx.exit(EXIT_ERROR)

    run.__doc__ = f"Import what {spec.title} holds, idempotently."
    f = with_options(
        (url_option, _project_option, json_option, *_ADOPT_OPTIONS, *spec.options), run
    )
    return click.command(spec.name, help=run.__doc__)(f)


def _export_command(spec: StoreSpec) -> click.Command:
    @click.pass_context
    def run(ctx: click.Context, url: str | None, out: str, as_json: bool) -> None:
        from gnomon.adapters.transfer import export_bindings

        with firewall.open(resolve_url(ctx, url)) as wall:
            if out == "-":
                count = export_bindings(wall, spec.name, sys.stdout)
            else:
                with staged_file(out) as staged:
                    lines = io.StringIO()
                    count = export_bindings(wall, spec.name, lines)
                    staged.write(lines.getvalue().encode("utf-8"))
        data = {"store": spec.name, "exported": count, "out": out}
        summary = f"{spec.name}: exported {count} beliefs with their labels to {out}"
        if out == "-":
            click.echo(json.dumps(data) if as_json else summary, err=True)
        elif as_json:
            echo_json(data)
        else:
            say(summary)

    doc = (
        f"Write every belief bound to {spec.title}, with its labels and binding, as JSON "
        "lines. Reads the firewall only."
    )
    f = with_options(
        (
            url_option,
            click.option(
                "--out",
                default="-",
                show_default=True,
                metavar="FILE",
                help="JSON-lines file ('-': stdout; the summary then goes to stderr).",
            ),
            json_option,
        ),
        run,
    )
    return click.command(spec.name, help=doc)(f)


def _sync_command(spec: StoreSpec) -> click.Command:
    @click.pass_context
    def run(
        ctx: click.Context, /, url: str | None, project: str, as_json: bool, **opts: Any
    ) -> None:
        with firewall.open(resolve_url(ctx, url)) as wall:
            conn = spec.connect(wall, project, opts)
            try:
                report = conn.adapter.sync(conn.scope)
            finally:
                conn.adapter.close()
                conn.close()
        if as_json:
            echo_json(
                {
                    "store": spec.name,
                    "scope": conn.scope,
                    "seen": report.seen,
                    "unbound": list(report.unbound),
                    "drifted": list(report.drifted),
                    "deleted": list(report.deleted),
                    "conflicts": list(report.conflicts),
                    "clean": report.clean,
                }
            )
        else:
            say(
                f"{spec.name}: {report.seen} items checked: {len(report.unbound)} unbound, "
                f"{len(report.drifted)} drifted, {len(report.deleted)} deleted, "
                f"{len(report.conflicts)} conflicts linked"
            )
            for kind, ids in (
                ("unbound", report.unbound),
                ("drifted", report.drifted),
                ("deleted", report.deleted),
                ("conflict", report.conflicts),
            ):
                for sid in ids:
                    say(f"  {kind}: {sid}")
        if not report.clean:
            ctx.exit(EXIT_FINDINGS)

    doc = (
        f"Find edits made to {spec.title} around the firewall and record them (drifted items "
        f"become suspicious). Exit status {DRIFT_EXIT} when any are found."
    )
    f = with_options((url_option, _project_option, json_option, *spec.options), run)
    return click.command(spec.name, help=doc)(f)


@click.group("import")
def import_group() -> None:
    """Import what a mem0, Letta or Zep store already holds (idempotent)."""


@click.group("export")
def export_group() -> None:
    """Export the beliefs bound to a mem0, Letta or Zep store, with their labels."""


@click.group("sync")
def sync_group() -> None:
    """Detect edits made to a mem0, Letta or Zep store around the firewall."""


for _spec in STORES.values():
    import_group.add_command(_import_command(_spec))
    export_group.add_command(_export_command(_spec))
    sync_group.add_command(_sync_command(_spec))


__all__ = [
    "CLIENT_HOOK",
    "DRIFT_EXIT",
    "STORES",
    "StoreSpec",
    "export_group",
    "hooked_client",
    "import_group",
    "sync_group",
    "with_options",
]
