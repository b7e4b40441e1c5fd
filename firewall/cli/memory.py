"""Commands over the beliefs in a store: list, show, recall, and the three privileged moves.

``promote`` and ``clear`` (and ``quarantine`` with ``--key``) act with *user* authority, which
only a grant signed by a pinned operator key carries: the command loads the private key, and
opens the firewall pinning the keys in the trusted-keys directory, so a key that is not pinned
is refused by the verifier exactly as a forged grant would be.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import click

from gnomon import firewall
from gnomon.firewall.audit.report import trusted_how
from gnomon.firewall.cli.common import (
    console,
    echo_json,
    json_option,
    resolve_trusted_keys,
    resolve_url,
    store_options,
    trusted_keys_option,
    url_option,
)
from gnomon.firewall.cli.render import (
    belief_detail,
    belief_json,
    beliefs_table,
    recall_json,
    recall_tables,
    section,
)
from gnomon.firewall.gate.grants import Grant, GrantSigner
from gnomon.firewall.host import config
from gnomon.firewall.model.filters import BeliefFilter
from gnomon.firewall.model.origin import Integrity
from gnomon.firewall.model.states import Authority, SecurityStatus, TruthStatus

CLI_ACTOR = "cli"


@click.group()
def beliefs() -> None:
    """Inspect the beliefs a store holds (all four axes, origin labels, history)."""


@beliefs.command("list")
@url_option
@click.option("--truth", type=click.Choice([s.value for s in TruthStatus]), default=None)
@click.option("--security", type=click.Choice([s.value for s in SecurityStatus]), default=None)
@click.option("--project", default=None, help="Only beliefs of this project (or global ones).")
@click.option("--limit", type=click.IntRange(1, 10_000), default=50, show_default=True)
@json_option
@click.pass_context
def beliefs_list(
    ctx: click.Context,
    url: str | None,
    truth: str | None,
    security: str | None,
    project: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """List beliefs, newest first, optionally filtered by truth or security status."""
    where = BeliefFilter(
        truth=frozenset({TruthStatus(truth)}) if truth else None,
        security=frozenset({SecurityStatus(security)}) if security else None,
        project=project,
        limit=limit,
    )
    with firewall.open(resolve_url(ctx, url)) as wall:
        found = wall.store.find_beliefs(where)
        total = wall.store.count_beliefs(where)
        # a trusted belief from an untrusted source says how it became trusted (its grant)
        adopted = {
            b.id: trusted_how(b, wall.store.revisions_for(b.id))
            for b in found
            if b.truth_status == TruthStatus.SUPPORTED and b.origin.integrity < Integrity.OBSERVED
        }
    if as_json:
        echo_json({"total": total, "beliefs": [belief_json(b) for b in found]})
        return
    table = beliefs_table(found, adopted)
    section(console(), f"beliefs ({len(found)} of {total})", table, len(found))


@beliefs.command("show")
@click.argument("belief_id")
@store_options
def beliefs_show(ctx: click.Context, belief_id: str, url: str | None, as_json: bool) -> None:
    """Show one belief: statement, the four axes, origin label and revisions."""
    with firewall.open(resolve_url(ctx, url)) as wall:
        belief = wall.require_belief(belief_id)
        revisions = wall.store.revisions_for(belief_id)
    if as_json:
        echo_json(belief_json(belief, revisions))
        return
    belief_detail(console(), belief, revisions)


@click.command()
@click.argument("query")
@click.option("--project", required=True, help="Project to recall in.")
@click.option("--user", default=None, help="User the session acts for.")
@click.option(
    "--policy",
    default="default",
    show_default=True,
    help="A preset (default, planner, reference, assistant) or a path to a policy .yaml file.",
)
@click.option(
    "-k", "k", type=click.IntRange(1, 200), default=10, show_default=True, help="Most matches."
)
@store_options
def recall(
    ctx: click.Context,
    query: str,
    project: str,
    user: str | None,
    policy: str,
    k: int,
    url: str | None,
    as_json: bool,
) -> None:
    """Recall memories for QUERY through a ContextPolicy, as actor `cli`, and show the buckets."""
    with (
        firewall.open(resolve_url(ctx, url)) as wall,
        wall.session(project=project, actor=CLI_ACTOR, user=user) as session,
    ):
        result = session.recall(query, policy=policy, k=k)
    if as_json:
        echo_json(recall_json(result))
        return
    recall_tables(console(), result)


def _granted_wall(
    ctx: click.Context, url: str | None, key: str, trusted_keys: str | None
) -> firewall.Firewall:
    pinned = config.pinned_keys(resolve_trusted_keys(ctx, trusted_keys))
    signer = GrantSigner.from_file(key)
    return firewall.open(resolve_url(ctx, url), trusted_keys=pinned, signer=signer)


def _report(
    belief: firewall.Belief, verb: str, authority: str, *, as_json: bool, grant_id: str | None
) -> None:
    """What a privileged move did: one line, or with ``--json`` the belief as it is now."""
    if as_json:
        echo_json(
            {"moved": verb, "authority": authority, "grant_id": grant_id, **belief_json(belief)}
        )
        return
    console().print(
        f"{verb} {belief.id} ({authority}): truth={belief.truth_status.value} "
        f"retrieval={belief.retrieval_status.value} security={belief.security_status.value}",
        soft_wrap=True,
    )


def _subject(key: str, subject: str | None) -> str:
    return subject or Path(key).stem


key_option = click.option(
    "--key",
    required=True,
    type=click.Path(dir_okay=False),
    help="Operator private key (PEM) that signs the grant; its public key must be pinned.",
)
reason_option = click.option("--reason", required=True, help="Why: recorded in the event log.")
subject_option = click.option(
    "--as", "subject", default=None, help="Who the grant names (default: the key file's name)."
)


@dataclass(frozen=True, slots=True)
class UserGrant:
    """The options of a move on a signed user grant: ``--key --reason --as --url
    --trusted-keys --json`` (see :func:`user_grant_command`)."""

    ctx: click.Context
    key: str
    reason: str
    subject: str | None
    url: str | None
    trusted_keys: str | None
    as_json: bool

    @contextmanager
    def open(self, beliefs: list[str]) -> Iterator[tuple[firewall.Firewall, Grant]]:
        """The firewall, signing with ``--key``, and a user grant over ``beliefs``."""
        with _granted_wall(self.ctx, self.url, self.key, self.trusted_keys) as wall:
            yield wall, wall.grant("user", _subject(self.key, self.subject), beliefs=beliefs)


#: The click parameters a :class:`UserGrant` carries (all its fields but the context).
_USER_GRANT_OPTIONS = tuple(f.name for f in fields(UserGrant) if f.name != "ctx")


def user_grant_command(f: Callable[..., None]) -> Callable[..., None]:
    """Give a command the user-grant options; ``f`` takes a :class:`UserGrant`, then its
    arguments (declare those above this decorator)."""

    def command(ctx: click.Context, **params: Any) -> None:
        options = {name: params.pop(name) for name in _USER_GRANT_OPTIONS}
        f(UserGrant(ctx, **options), **params)

    command.__name__, command.__doc__ = f.__name__, f.__doc__
    wrapped: Callable[..., None] = click.pass_context(command)
    for option in (
        json_option,
        trusted_keys_option,
        url_option,
        subject_option,
        reason_option,
        key_option,
    ):
        wrapped = option(wrapped)
    return wrapped


def _granted_move(
    g: UserGrant, belief_id: str, verb: str, move: Callable[..., firewall.Belief]
) -> None:
    """``move(wall, belief_id, grant=, reason=)`` on a user grant over the one belief."""
    with g.open([belief_id]) as (wall, grant):
        belief = move(wall, belief_id, grant=grant, reason=g.reason)
    _report(belief, verb, f"user grant {grant.id}", as_json=g.as_json, grant_id=grant.id)


@click.command()
@click.argument("belief_id")
@user_grant_command
def promote(g: UserGrant, belief_id: str) -> None:
    """Make a belief supported and normally retrievable, on a signed user grant."""
    _granted_move(g, belief_id, "promoted", firewall.Firewall.promote)


@click.command()
@click.argument("belief_id")
@reason_option
@click.option(
    "--key",
    default=None,
    type=click.Path(dir_okay=False),
    help="Quarantine with a signed user grant; without it the host acts as a sentinel.",
)
@subject_option
@url_option
@trusted_keys_option
@json_option
@click.pass_context
def quarantine(
    ctx: click.Context,
    belief_id: str,
    reason: str,
    key: str | None,
    subject: str | None,
    url: str | None,
    trusted_keys: str | None,
    as_json: bool,
) -> None:
    """Quarantine a belief: only the audit path sees it afterwards (one-way without `clear`)."""
    if key is None:
        with firewall.open(resolve_url(ctx, url)) as wall:
            belief = wall.quarantine(belief_id, reason=reason, authority=Authority.SENTINEL)
        _report(belief, "quarantined", "sentinel", as_json=as_json, grant_id=None)
        return
    with _granted_wall(ctx, url, key, trusted_keys) as wall:
        grant = wall.grant("user", _subject(key, subject), beliefs=[belief_id])
        belief = wall.quarantine(belief_id, reason=reason, grant=grant)
    _report(belief, "quarantined", f"user grant {grant.id}", as_json=as_json, grant_id=grant.id)


@click.command()
@click.argument("belief_id")
@user_grant_command
def clear(g: UserGrant, belief_id: str) -> None:
    """Clear a suspicious or quarantined belief back to clean and restricted (user grant)."""
    _granted_move(g, belief_id, "cleared", firewall.Firewall.clear)


__all__ = ["beliefs", "clear", "promote", "quarantine", "recall"]
