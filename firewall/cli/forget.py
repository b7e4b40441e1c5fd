"""``gnomon forget``: erase a belief, an origin, a subject or a project, on a signed operator
grant, and write a signed erasure certificate (:mod:`firewall.audit.erasure_certificate`).

``gnomon forget ... mem0|letta|zep [store options]`` also erases the items the wrapped store
holds for the erased beliefs, through its SDK (:func:`adapters.erasure.erase_in_store`), with
the options and client of ``gnomon import STORE`` (:data:`firewall.cli.stores.STORES`). The
store is connected before anything is erased (a bad option or a missing SDK erases nothing), and
every item is read back afterwards: the certificate records what was deleted and what the store
still returns. A store that still returns an item is reported and the command exits 1; its
certificate names the store and never verifies."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gnomon import firewall
from gnomon.firewall.audit.erasure import (
    DerivedMode,
    ErasureResult,
    ErasureTarget,
    TargetKind,
    held_requests,
)
from gnomon.firewall.audit.erasure_certificate import certificate_fields, sign_certificate
from gnomon.firewall.cli.common import (
    EXIT_ERROR,
    echo,
    echo_json,
    json_option,
    resolve_trusted_keys,
    resolve_url,
    say,
    trusted_keys_option,
    url_option,
    write_file,
)
from gnomon.firewall.cli.stores import STORES, StoreSpec, with_options
from gnomon.firewall.gate.grants import GrantSigner, key_id_of
from gnomon.firewall.host import config
from gnomon.firewall.model.errors import ForgedGrantError, InputError, MissingGrantError
from gnomon.firewall.store.registry import open_store

if TYPE_CHECKING:
    from gnomon.firewall.audit.erasure_certificate import WrappedErasure


def _target(
    belief: str | None, origin: str | None, subject: str | None, project: str | None
) -> ErasureTarget:
    given = [
        (kind, value)
        for kind, value in (
            (TargetKind.BELIEF, belief),
            (TargetKind.ORIGIN, origin),
            (TargetKind.SUBJECT, subject),
            (TargetKind.PROJECT, project),
        )
        if value is not None
    ]
    if len(given) != 1:
        raise InputError(
            "name exactly one thing to forget",
            hint="pass one of --belief ID, --origin user:alice, --subject S, --project P",
        )
    return ErasureTarget(*given[0])


@click.group("forget", invoke_without_command=True, chain=False)
@click.option("--belief", default=None, metavar="ID", help="Erase one belief.")
@click.option("--origin", default=None, metavar="ORIGIN", help="Erase everything from one origin.")
@click.option("--subject", default=None, help="Erase every belief about one subject.")
@click.option(
    "--project",
    default=None,
    help="Erase a whole project (tenant); with another target, the project it is limited to.",
)
@click.option(
    "--derived",
    type=click.Choice([m.value for m in DerivedMode]),
    default=DerivedMode.LIST.value,
    show_default=True,
    help="Beliefs whose label joins the erased origin with others (agent notes, extracted "
    "facts): erase them too, or list them for you to decide.",
)
@click.option(
    "--requests",
    "list_requests",
    is_flag=True,
    help="List the erasure requests agents made (held, never executed on their word) and exit.",
)
@click.option(
    "--key",
    default=None,
    type=click.Path(dir_okay=False),
    help="Operator private key (PEM) that signs the eraser grant and the certificate; its "
    "public key must be pinned.",
)
@click.option("--as", "subject_name", default=None, help="Who the grant names (default: key).")
@click.option(
    "--certificate",
    "out",
    default=None,
    type=click.Path(dir_okay=False),
    help="Where to write the signed erasure certificate (default: erasure-<seq>.json here).",
)
@url_option
@trusted_keys_option
@json_option
@click.pass_context
def forget_command(ctx: click.Context, /, **_options: Any) -> None:
    """Erase text from the store and the log for good, keep the chain verifiable, and write a
    signed erasure certificate (check it with `gnomon log verify --certificate FILE`). Name a
    wrapped store after the options (`... mem0 --mem0-config FILE --user-id U`) to erase its
    copies too, through its SDK, read back."""
    if ctx.invoked_subcommand is None:
        _forget(ctx, None, {})


def _forget(
    ctx: click.Context,
    spec: StoreSpec | None,
    store_options: dict[str, Any],
    *,
    as_json: bool = False,
) -> None:
    """The erasure ``ctx``'s options ask for; with ``spec``, in that wrapped store too
    (``as_json``: ``--json`` given after the store's name)."""
    p = {**ctx.params, "as_json": ctx.params["as_json"] or as_json}
    if p["list_requests"]:
        if spec is not None:
            raise InputError(
                "--requests lists held requests: it erases nothing, in no store",
                hint="gnomon forget --requests",
            )
        _show_requests(ctx, p["url"], as_json=p["as_json"])
        return
    key = p["key"]
    if key is None:
        raise MissingGrantError(
            "gnomon forget needs --key: an erasure rests on a grant signed by a pinned operator "
            "key",
            hint="gnomon forget --origin user:alice --key ~/.local/share/gnomon/keys/operator.key",
        )
    belief, origin, subject, project = p["belief"], p["origin"], p["subject"], p["project"]
    scope = project if belief or origin or subject else None
    target = _target(belief, origin, subject, None if scope else project)
    pinned = config.pinned_keys(resolve_trusted_keys(ctx, p["trusted_keys"]))
    signer = GrantSigner.from_file(key)
    if signer.key_id not in {key_id_of(k) for k in pinned}:
        raise ForgedGrantError(
            f"{key} is not a pinned operator key: an erasure needs one",
            hint="pin its public key with `gnomon keys generate` (or --trusted-keys DIR)",
        )
    store_url = resolve_url(ctx, p["url"])
    operator = p["subject_name"] or Path(key).stem
    grant_project = target.value if target.kind is TargetKind.PROJECT else scope
    wrapped: list[WrappedErasure] = []
    with firewall.open(store_url, trusted_keys=pinned, signer=signer) as wall:
        # connected first: a bad store option or a missing SDK must erase nothing
        conn = spec.connect(wall, grant_project or "default", store_options) if spec else None
        try:
            grant = wall.grant("eraser", operator, project=grant_project)
            result = wall.forget(target, grant=grant, derived=p["derived"])
            if conn is not None:
                from gnomon.adapters.erasure import erase_in_store

                wrapped.append(erase_in_store(conn.adapter, result.beliefs))
        finally:
            if conn is not None:
                conn.adapter.close()
                conn.close()
        fields = certificate_fields(
            result, store=store_url, operator=operator, derived=p["derived"], wrapped=wrapped
        )
    certificate = sign_certificate(fields, signer)
    path = p["out"] or f"erasure-{result.event.seq}.json"
    write_file(path, certificate)
    _report(result, wrapped, path, as_json=p["as_json"])
    lying = [w for w in wrapped if w.remaining]
    for w in lying:
        echo(
            f"error: {w.store} still returns {len(w.remaining)} item(s) it was asked to delete: "
            f"{', '.join(w.remaining)}\nhint: the erasure is not certified (log verify "
            f"--certificate {path} refuses it); delete them in {w.store} and check again",
            err=True,
            multiline=True,
        )
    if lying:
        ctx.exit(EXIT_ERROR)


def _report(
    result: ErasureResult, wrapped: list[WrappedErasure], path: str, *, as_json: bool
) -> None:
    if as_json:
        echo_json(
            {
                "erasure_seq": result.event.seq,
                "grant_id": result.grant_id,
                "beliefs": list(result.beliefs),
                "listed": list(result.listed),
                "events": len(result.events),
                "certificate": path,
                "wrapped": [w.model_dump(mode="json") for w in wrapped],
            }
        )
        return
    say(
        f"erased {len(result.beliefs)} belief(s) in {len(result.events)} event(s) on "
        f"{result.on} by grant {result.grant_id} (erasure event {result.event.seq})"
    )
    for w in wrapped:
        say(
            f"{w.store}: deleted {len(w.deleted)} item(s), read back: "
            + (f"{len(w.remaining)} still returned" if w.remaining else "none returned")
        )
    for belief_id in result.listed:
        say(f"derived, not erased: {belief_id} (erase it with --belief or --derived erase)")
    say(f"certificate: {path} (check it: gnomon log verify --certificate {path})")


def _store_command(spec: StoreSpec) -> click.Command:
    @click.pass_context
    def run(ctx: click.Context, /, as_json: bool, **opts: Any) -> None:
        assert ctx.parent is not None
        _forget(ctx.parent, spec, opts, as_json=as_json)

    doc = (
        f"Also erase the copies {spec.title} holds of the erased beliefs, through its SDK, and "
        "read each back (the options of `gnomon import`)."
    )
    return click.command(spec.name, help=doc)(with_options((json_option, *spec.options), run))


def _show_requests(ctx: click.Context, url: str | None, *, as_json: bool) -> None:
    with open_store(resolve_url(ctx, url)) as store:
        held = held_requests(store)
    if as_json:
        echo_json([asdict(r) for r in held])
        return
    if not held:
        say("no erasure requests are held")
    for r in held:
        say(
            f"{r.request_id}: {r.actor} asks to erase {r.belief_id} ({r.at}, session "
            f"{r.session_id or '-'}): {r.reason or 'no reason given'}"
        )


for _spec in STORES.values():
    forget_command.add_command(_store_command(_spec))

__all__ = ["forget_command"]
