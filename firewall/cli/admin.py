"""Operator commands: the demo, policies, the event log, keys and probes."""

from __future__ import annotations

import importlib
from typing import Any

import click
from rich.table import Table

from gnomon.firewall.cli.common import (
    console,
    echo_json,
    json_option,
    resolve_trusted_keys,
    say,
    trusted_keys_option,
    write_file,
)
from gnomon.firewall.cli.logcmd import (
    log_adopt,
    log_checkpoint,
    log_export,
    log_import,
    log_verify,
)
from gnomon.firewall.cli.render import policy_summary
from gnomon.firewall.gate.grants import write_keypair
from gnomon.firewall.gate.policy import ContextPolicy
from gnomon.firewall.host import config
from gnomon.firewall.host.demo import DemoResult, run_demo
from gnomon.firewall.model.errors import GnomonError, KeyFileError, StoreError
from gnomon.firewall.store.paths import keys_dir, private_file

# -- demo -----------------------------------------------------------------------------------


@click.command()
@click.option(
    "--url",
    default=None,
    metavar="URL",
    help="Where to run the demo (default: demo/demo.db in the user data directory, recreated on "
    "every run; $GNOMON_URL is deliberately ignored so the demo never writes into a real store).",
)
@click.option(
    "--story",
    type=click.Choice(["memory", "push"]),
    default="memory",
    show_default=True,
    help="memory: the poisoned-repository recall story; push: a poisoned README steers the "
    "agent to `git push`, and the action kernel holds it.",
)
@json_option
def demo(url: str | None, as_json: bool, story: str = "memory") -> None:
    """Run the poisoned-repository scenario end to end and print the verdict."""
    own = url is None or url == config.demo_url()
    url = fresh_demo_store() if own or url is None else url
    if story == "push":
        from gnomon.firewall.cli.kernel import push_demo

        push_demo(url, as_json)
        return
    path = config.sqlite_path(url)
    if not own and path is not None and path.exists():
        raise StoreError(
            f"the demo needs a fresh store and {path} already exists",
            hint="remove it, or run `gnomon demo` without --url (it uses its own store)",
        )
    out = console()
    if not as_json and path is not None:
        say(f"Demo store: {path.resolve()} ({url})")
    result = run_demo(url, on_step=None if as_json else lambda line: out.print(line, markup=False))
    if as_json:
        echo_json(result.to_json())
    else:
        _demo_report(result)
    if not result.passed:
        raise GnomonError(
            result.verdict, hint="a check above failed: this is a bug, please report it"
        )


def fresh_demo_store() -> str:
    """The demo's own store, emptied and ready (owner-only, in the data directory); its URL."""
    url = config.demo_url()
    config.reset_sqlite_file(url)
    path = config.sqlite_path(url)
    if path is not None:
        try:
            private_file(path)
        except OSError as exc:
            raise StoreError(
                f"cannot create the demo store {path}: {exc.strerror or exc}",
                hint="set $GNOMON_HOME to a directory you can write to, or pass --url",
            ) from exc
    return url


def _demo_report(result: DemoResult) -> None:
    out = console()
    table = Table(title="checks", title_justify="left")
    for column in ("check", "result", "detail"):
        table.add_column(column, overflow="fold")
    for check in result.checks:
        table.add_row(check.name, "pass" if check.passed else "FAIL", check.detail)
    out.print(table)
    out.print("What the model sees under the reference policy:", style="bold")
    context, _, uncertain = result.recalls["reference"].context.partition("\n## Uncertain\n")
    out.print(context, markup=False, highlight=False, soft_wrap=True)
    if uncertain:
        count = len(uncertain.splitlines())
        out.print(f"## Uncertain\n- ({count} unconfirmed memories named by origin, not shown here)")
    out.print()
    out.print(
        result.verdict,
        style="bold green" if result.passed else "bold red",
        markup=False,
        soft_wrap=True,
    )
    out.print(f"({result.events} events in the log, {result.seconds:.2f} s)")
    url = result.url
    out.print("\nSessions:", style="bold")
    for role, ident in result.sessions.items():
        out.print(f"  {ident}  {_SESSION_ROLES[role]}", markup=False, highlight=False)
    out.print(
        "\nWhere to look next (the demo's own store; `gnomon init` creates the default one):",
        style="bold",
        markup=False,
    )
    for line in (
        f"gnomon report {result.sessions['reader']} --html --out report.html --url {url}",
        f"gnomon sessions list --url {url}",
        f"gnomon beliefs list --url {url}",
        f"gnomon beliefs show {result.poison_content_id} --url {url}",
        f"gnomon log verify --url {url}",
        f'gnomon recall "{result.query}" --project shop --user alice --policy reference '
        f"--url {url}",
    ):
        out.print(f"  {line}", markup=False, highlight=False, soft_wrap=True)


_SESSION_ROLES = {
    "reader": "session A: read the chat message, the source file and the poison",
    "recall": "session B: recalled under default, planner and reference",
    "sentinel": "the recalls before and after the sentinel's quarantine",
}


# -- policy ---------------------------------------------------------------------------------


@click.group()
def policy() -> None:
    """Validate ContextPolicy files and print their JSON Schema."""


@policy.command("check")
@click.argument("file", type=click.Path(dir_okay=False))
@json_option
def policy_check(file: str, as_json: bool) -> None:
    """Validate a policy FILE and print its summary and digest."""
    loaded = ContextPolicy.from_yaml(file)
    if as_json:
        echo_json({"file": file, "policy": loaded.model_dump(mode="json"), "digest": loaded.digest})
        return
    policy_summary(console(), loaded, file)
    say(f"ok: {file} is a valid ContextPolicy")


@policy.command("schema")
@json_option
def policy_schema(as_json: bool) -> None:
    """Print the ContextPolicy JSON Schema (draft 2020-12); it is JSON with or without --json."""
    echo_json(ContextPolicy.json_schema())


# -- log ------------------------------------------------------------------------------------


@click.group()
def log() -> None:
    """The hash-chained event log: verify, checkpoint, export, import, adopt."""


for _command in (log_verify, log_checkpoint, log_export, log_import, log_adopt):
    log.add_command(_command)


# -- keys -----------------------------------------------------------------------------------


@click.group()
def keys() -> None:
    """Operator keys that sign grants (user authority for promote / clear)."""


@keys.command("generate")
@click.option(
    "--dir",
    "directory",
    default=None,
    metavar="DIR",
    help="Where to write the key pair (default: keys/ in the user data directory).",
)
@click.option("--name", default="operator", show_default=True, help="File name stem.")
@trusted_keys_option
@json_option
@click.pass_context
def keys_generate(
    ctx: click.Context, directory: str | None, name: str, trusted_keys: str | None, as_json: bool
) -> None:
    """Write an Ed25519 key pair and pin its public key in the trusted-keys directory."""
    directory = directory or str(keys_dir())
    try:
        private_path, public_path = write_keypair(directory, name)
    except OSError as exc:
        raise KeyFileError(
            f"cannot write a key pair into {directory}: {exc.strerror or exc}",
            hint="choose a --dir you can write to",
        ) from exc
    pinned = config.pin_key(public_path, resolve_trusted_keys(ctx, trusted_keys))
    if as_json:
        echo_json(
            {
                "private_key": str(private_path),
                "public_key": str(public_path),
                "pinned": str(pinned),
            }
        )
        return
    say(f"private key: {private_path}  (keep it secret; mode 0600)")
    say(f"public key:  {public_path}")
    say(f"pinned:      {pinned}")


@keys.command("grant")
@click.option(
    "--key",
    required=True,
    type=click.Path(dir_okay=False),
    help="Operator private key (PEM) that signs the grant; its public key must be pinned.",
)
@click.option("--project", required=True, help="The project whose imported memories it covers.")
@click.option("--store", required=True, help="The store whose imported memories it covers.")
@click.option("--as", "subject", default=None, help="Who it names (default: the key's name).")
@click.option("--minutes", default=15, show_default=True, type=click.IntRange(1, 1440))
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Grant file.")
@json_option
def keys_grant(
    key: str, project: str, store: str, subject: str | None, minutes: int, out: str, as_json: bool
) -> None:
    """Sign a single-use user grant over a store's imported memories in one project, for
    ``gnomon import STORE ... --adopt-as user --grant FILE``."""
    from datetime import timedelta
    from pathlib import Path

    from gnomon.firewall.gate.grants import GrantSigner

    grant = GrantSigner.from_file(key).issue(
        "user",
        subject or Path(key).stem,
        project=project,
        store=store,
        ttl=timedelta(minutes=minutes),
    )
    write_file(out, grant.model_dump_json() + "\n")
    if as_json:
        echo_json({"grant_id": grant.id, "store": store, "project": project, "out": out})
        return
    say(
        f"grant {grant.id}: user {grant.subject} may adopt {store} imports in {project} "
        f"until {grant.expires_at.isoformat()} -> {out}"
    )


# -- probes ---------------------------------------------------------------------------------


@click.group()
def probes() -> None:
    """The executable threat model."""


@probes.command("run")
@json_option
@click.pass_context
def probes_run(ctx: click.Context, as_json: bool) -> None:
    """Run every probe and show which held; exit 1 if any failed (an attack got through). A
    probe that needs an optional extra that is not installed is skipped, naming the extra."""
    results = _load_runner()()
    rows: list[dict[str, Any]] = [
        {
            "name": str(r.name),
            "passed": bool(r.passed),
            "skipped": getattr(r, "skipped", None),
            "detail": str(r.detail),
        }
        for r in results
    ]
    failed = [r["name"] for r in rows if not r["passed"] and not r["skipped"]]
    skipped = [r for r in rows if r["skipped"]]
    if as_json:
        echo_json({"passed": not failed, "probes": rows})
        if failed:
            ctx.exit(1)
        return
    table = Table(title=f"probes ({len(rows)})", title_justify="left")
    for column in ("probe", "result", "detail"):
        table.add_column(column, overflow="fold")
    for row in rows:
        result = "skipped" if row["skipped"] else "pass" if row["passed"] else "FAIL"
        table.add_row(row["name"], result, row["detail"])
    console().print(table)
    if failed:
        raise GnomonError(
            f"{len(failed)} of {len(rows)} probes failed: {', '.join(failed)}",
            hint="each failing probe names the attack that got through; see its detail above",
        )
    held = len(rows) - len(skipped)
    if skipped:
        commands = sorted({str(r["skipped"]) for r in skipped})
        say(f"ok: {held} probes held, {len(skipped)} skipped (install: {'; '.join(commands)})")
    else:
        say(f"ok: all {len(rows)} probes held")


def _load_runner() -> Any:
    try:
        runner = importlib.import_module("gnomon.probes.runner")
    except ModuleNotFoundError as exc:
        if exc.name not in ("gnomon.probes", "gnomon.probes.runner"):
            raise
        raise GnomonError(
            "the probe harness (gnomon.probes.runner) is not installed in this environment",
            hint="run from a checkout that has probes/runner.py, installed with `pip install -e .`",
        ) from exc
    return runner.run_all


__all__ = ["demo", "keys", "log", "policy", "probes"]
