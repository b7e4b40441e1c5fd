"""``gnomon forget``: erase a belief, an origin, a subject or a project, on a signed operator
grant, and write a signed erasure certificate (:mod:`firewall.audit.erasure_certificate`)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import click

from gnomon import firewall
from gnomon.firewall.audit.erasure import DerivedMode, ErasureTarget, TargetKind, held_requests
from gnomon.firewall.audit.erasure_certificate import certificate_fields, sign_certificate
from gnomon.firewall.cli.common import (
    echo_json,
    json_option,
    resolve_trusted_keys,
    resolve_url,
    say,
    trusted_keys_option,
    url_option,
    write_file,
)
from gnomon.firewall.gate.grants import GrantSigner, key_id_of
from gnomon.firewall.host import config
from gnomon.firewall.model.errors import ForgedGrantError, InputError, MissingGrantError
from gnomon.firewall.store.registry import open_store


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


@click.command("forget")
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
def forget_command(
    ctx: click.Context,
    belief: str | None,
    origin: str | None,
    subject: str | None,
    project: str | None,
    derived: str,
    list_requests: bool,
    key: str | None,
    subject_name: str | None,
    out: str | None,
    url: str | None,
    trusted_keys: str | None,
    as_json: bool,
) -> None:
    """Erase text from the store and the log for good, keep the chain verifiable, and write a
    signed erasure certificate (check it with `gnomon log verify --certificate FILE`)."""
    if list_requests:
        _show_requests(ctx, url, as_json=as_json)
        return
    if key is None:
        raise MissingGrantError(
            "gnomon forget needs --key: an erasure rests on a grant signed by a pinned operator "
            "key",
            hint="gnomon forget --origin user:alice --key ~/.local/share/gnomon/keys/operator.key",
        )
    scope = project if belief or origin or subject else None
    target = _target(belief, origin, subject, None if scope else project)
    pinned = config.pinned_keys(resolve_trusted_keys(ctx, trusted_keys))
    signer = GrantSigner.from_file(key)
    if signer.key_id not in {key_id_of(k) for k in pinned}:
        raise ForgedGrantError(
            f"{key} is not a pinned operator key: an erasure needs one",
            hint="pin its public key with `gnomon keys generate` (or --trusted-keys DIR)",
        )
    store_url = resolve_url(ctx, url)
    with firewall.open(store_url, trusted_keys=pinned, signer=signer) as wall:
        operator = subject_name or Path(key).stem
        grant_project = target.value if target.kind is TargetKind.PROJECT else scope
        grant = wall.grant("eraser", operator, project=grant_project)
        result = wall.forget(target, grant=grant, derived=derived)
        fields = certificate_fields(result, store=store_url, operator=operator, derived=derived)
    certificate = sign_certificate(fields, signer)
    path = out or f"erasure-{result.event.seq}.json"
    write_file(path, certificate)
    if as_json:
        echo_json(
            {
                "erasure_seq": result.event.seq,
                "grant_id": result.grant_id,
                "beliefs": list(result.beliefs),
                "listed": list(result.listed),
                "events": len(result.events),
                "certificate": path,
            }
        )
        return
    say(
        f"erased {len(result.beliefs)} belief(s) in {len(result.events)} event(s) on "
        f"{result.on} by grant {result.grant_id} (erasure event {result.event.seq})"
    )
    for belief_id in result.listed:
        say(f"derived, not erased: {belief_id} (erase it with --belief or --derived erase)")
    say(f"certificate: {path} (check it: gnomon log verify --certificate {path})")


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


__all__ = ["forget_command"]
