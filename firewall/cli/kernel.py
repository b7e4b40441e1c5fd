"""The action kernel's commands: sign and verify action policies, list holds, approve, deny.

``gnomon approve`` and ``gnomon deny`` work across processes through the store: they sign an
approval with the approver's key and write it to the log (``approval.submitted``). Nothing
executes here; the host's kernel picks the approval up, verifies it against its pinned approver
keys, and executes (or records a forgery).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import click

from gnomon import firewall
from gnomon.firewall.audit.credentials import masked, masked_tree
from gnomon.firewall.cli.admin import policy
from gnomon.firewall.cli.common import (
    console,
    echo,
    echo_json,
    json_option,
    resolve_url,
    url_option,
)
from gnomon.firewall.gate.grants import KeyPurpose, load_public_key
from gnomon.firewall.host.approval_http import fetch_hold, send_approval
from gnomon.firewall.kernel.approvals import ApprovalRequest, ApprovalSigner, ResolutionSigner
from gnomon.firewall.kernel.ledger import (
    post_approval,
    post_resolution,
    read_ledger,
    read_request,
)
from gnomon.firewall.kernel.signing import PolicySigner, load_action_policy
from gnomon.firewall.model.errors import ForgedApprovalError, InputError, UnknownIdError


@policy.command("sign")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--key", "key", required=True, type=click.Path(dir_okay=False), help="Operator private key."
)
@json_option
def policy_sign(file: str, key: str, as_json: bool) -> None:
    """Sign the action policy FILE with an operator KEY (writes FILE.sig)."""
    signer = PolicySigner.from_file(key)
    out = signer.sign_file(file)
    if as_json:
        echo_json({"file": file, "signature": str(out), "key_id": signer.key_id})
        return
    echo(f"signed {file} with key {signer.key_id}: {out}")


@policy.command("verify")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--pub",
    "pubs",
    multiple=True,
    required=True,
    type=click.Path(dir_okay=False),
    help="Pinned operator public key (repeatable).",
)
@json_option
def policy_verify(file: str, pubs: tuple[str, ...], as_json: bool) -> None:
    """Verify the action policy FILE against pinned operator keys (exit 1 if it does not)."""
    keys = [load_public_key(p, purpose=KeyPurpose.POLICY) for p in pubs]
    loaded = load_action_policy(file, keys=keys)
    if as_json:
        echo_json(
            {
                "file": file,
                "policy": loaded.policy.name,
                "digest": loaded.digest,
                "key_id": loaded.key_id,
            }
        )
        return
    echo(f"{file}: policy {loaded.policy.name!r} digest {loaded.digest} signed by {loaded.key_id}")


@click.group("holds", invoke_without_command=True)
@click.option(
    "--approver-pub",
    "approver_pubs",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Pinned approver public key (repeatable): an approval that does not verify against "
    "them leaves its request listed as held.",
)
@url_option
@json_option
@click.pass_context
def holds_command(
    ctx: click.Context, approver_pubs: tuple[str, ...], url: str | None, as_json: bool
) -> None:
    """List actions held for approval, approved but not run yet, and whose outcome is unknown
    (claimed, never finished: resolve them with `gnomon holds resolve`), rebuilt from the log."""
    if ctx.invoked_subcommand is not None:
        return
    keys = [load_public_key(p, purpose=KeyPurpose.APPROVAL) for p in approver_pubs]
    with firewall.open(resolve_url(ctx, url)) as wall:
        ledger = read_ledger(wall.store, approvers=keys or None)
    for problem in ledger.malformed:
        echo(f"warning: malformed kernel event skipped: {problem}", err=True)
    rows = [s.request for s in ledger.holds() if s.request is not None]
    unknown = [(s, "outcome_unknown") for s in ledger.unknown_outcomes()]
    unknown += [(s, "approved_not_run") for s in ledger.approved_unclaimed()]
    if as_json:
        listed = [{**r.model_dump(mode="json"), "status": "held"} for r in rows]
        listed.extend(
            {
                "id": s.request_id,
                "action_id": s.action_id,
                "session_id": s.session_id,
                "project": s.project,
                "tool": str(s.proposal.get("tool")),
                "level": str(s.proposal.get("level")),
                "status": status,
            }
            for s, status in unknown
        )
        echo_json(masked_tree(listed))
        return
    out = _Masked(console())
    for s, status in unknown:
        what = (
            "OUTCOME UNKNOWN: claimed for execution, never finished"
            if status == "outcome_unknown"
            else "APPROVED, NOT RUN YET: the host runs it (checking the approval again)"
        )
        out.print(
            f"{s.request_id}  {s.proposal.get('tool')} [{s.proposal.get('level')}]  session "
            f"{s.session_id}  {what}",
            markup=False,
            soft_wrap=True,
        )
        if status != "outcome_unknown":
            continue
        out.print(
            f"    resolve: gnomon holds resolve {s.request_id} --failed|--ran "
            "--key OPERATOR_KEY --operator NAME",
            markup=False,
            soft_wrap=True,
        )
    if not rows:
        if not unknown:
            echo("no action is held")
        return
    for r in rows:
        out.print(
            f"{r.id}  {r.tool} [{r.level}]  session {r.session_id}  "
            f"deadline {r.deadline.isoformat()}",
            markup=False,
            soft_wrap=True,
        )
        for reason in r.reasons:
            out.print(f"    - {reason}", markup=False, soft_wrap=True)
        _print_arguments(out, r)


class _Masked:
    """The console ``gnomon holds`` prints through: the one place its text meets the
    credential rule (:func:`firewall.audit.credentials.masked`): a key in a tool name, a
    reason or an argument is masked where it stands."""

    def __init__(self, out: Any) -> None:
        self._out = out

    def print(self, text: str, **options: Any) -> None:
        self._out.print(masked(text), **options)


def _print_arguments(out: Any, request: ApprovalRequest) -> None:
    """The arguments that will run, each with the provenance of its value (secrets redacted)."""
    if not request.arguments:
        return
    out.print("    arguments (what will run, and where each value came from):", markup=False)
    for argument in request.arguments:
        out.print(f"      {argument.line()}", markup=False, soft_wrap=True)


@holds_command.command("resolve")
@click.argument("request_id")
@click.option("--ran", "outcome", flag_value="ran", help="It ran: the operator checked.")
@click.option("--failed", "outcome", flag_value="failed", help="It did not run, or failed.")
@click.option("--key", required=True, type=click.Path(dir_okay=False), help="Operator private key.")
@click.option("--operator", required=True, help="Who resolves it (recorded and signed).")
@click.option("--note", default="", help="What the operator found (recorded and signed).")
@url_option
@json_option
@click.pass_context
def holds_resolve(
    ctx: click.Context,
    request_id: str,
    outcome: Literal["ran", "failed"] | None,
    key: str,
    operator: str,
    note: str,
    url: str | None,
    as_json: bool,
) -> None:
    """Resolve REQUEST_ID, whose outcome is unknown (its host died mid-call): --ran or
    --failed, signed with an operator key and recorded (`action.resolved`)."""
    if outcome is None:
        raise InputError("say what happened: --ran or --failed")
    signer = ResolutionSigner.from_file(key)
    with firewall.open(resolve_url(ctx, url)) as wall:
        state = read_request(wall.store, request_id)
        if state is None:
            raise UnknownIdError("request", request_id)
        resolution = signer.resolve(
            request_id, state.action_id, outcome, operator=operator, now=wall.clock(), note=note
        )
        event = post_resolution(wall.store, resolution)
    if as_json:
        echo_json({"request_id": request_id, "outcome": outcome, "seq": event.seq})
        return
    echo(f"{request_id} resolved as {outcome} by {operator} (#{event.seq})")


def _resolve(
    ctx: click.Context,
    request_id: str,
    key: str,
    approver: str,
    ttl: int,
    url: str | None,
    decision: Literal["approve", "deny"],
    as_json: bool,
    http: str | None = None,
) -> None:
    if not 1 <= ttl <= 24 * 60:
        raise InputError(f"--ttl must be 1..1440 minutes, got {ttl}")
    signer = ApprovalSigner.from_file(key, approver)
    if http is not None:
        request = fetch_hold(http, request_id)
        _authorised(signer, request)
        approval = signer.resolve(request, decision, ttl=timedelta(minutes=ttl), now=utc_now())
        answer = send_approval(http, approval.to_json())
        seq, where = answer.get("seq"), f"sent to {http}"
        verdict = str(answer.get("status", "submitted"))
    else:
        with firewall.open(resolve_url(ctx, url)) as wall:
            state = read_request(wall.store, request_id)
            if state is None or state.request is None:
                raise UnknownIdError("request", request_id)
            request = state.request
            _authorised(signer, request)
            approval = signer.resolve(
                request, decision, ttl=timedelta(minutes=ttl), now=wall.clock()
            )
            seq = post_approval(wall.store, approval, now=wall.clock()).seq
        where, verdict = "written to the log", "submitted"
    if as_json:
        echo_json(
            {
                "request_id": request_id,
                "decision": decision,
                "seq": seq,
                "status": verdict,
                "tool": request.tool,
                "arguments": [a.model_dump() for a in request.arguments],
            }
        )
        return
    out = console()
    out.print(f"{decision}: {request.tool} [{request.level}]", markup=False, soft_wrap=True)
    _print_arguments(out, request)
    then = "the host verifies it" if verdict == "submitted" else f"the request is {verdict}"
    echo(f"{decision} for {request_id} {where} (#{seq}); {then}")


def utc_now() -> datetime:
    return datetime.now(UTC)


def _authorised(signer: ApprovalSigner, request: ApprovalRequest) -> None:
    if request.approvers and signer.key_id not in request.approvers:
        raise ForgedApprovalError(
            "unauthorised",
            f"key {signer.key_id} may not resolve {request.id}: the policy rule that held it "
            f"names approver keys {', '.join(request.approvers)}",
            hint="ask an approver the rule names (its approvers: key ids or roles)",
        )


def _resolution_command(decision: Literal["approve", "deny"]) -> click.Command:
    @click.command(decision)
    @click.argument("request_id")
    @click.option(
        "--key", required=True, type=click.Path(dir_okay=False), help="Approver private key."
    )
    @click.option("--approver", required=True, help="Who approves (recorded and signed).")
    @click.option(
        "--ttl", type=int, default=10, show_default=True, help="Minutes the approval is valid."
    )
    @url_option
    @click.option(
        "--http",
        default=None,
        metavar="URL",
        help="Send it to a running proxy's approval channel (gnomon mcp proxy --approvals) "
        "instead of writing it to the store.",
    )
    @json_option
    @click.pass_context
    def command(
        ctx: click.Context,
        request_id: str,
        key: str,
        approver: str,
        ttl: int,
        url: str | None,
        http: str | None,
        as_json: bool,
    ) -> None:
        _resolve(ctx, request_id, key, approver, ttl, url, decision, as_json, http)

    command.help = f"Sign and submit a '{decision}' for the held REQUEST_ID (executed by the host)."
    return command


def push_demo(url: str, as_json: bool) -> None:
    """``gnomon demo --story push``: the poisoned README, the summary, the HELD push."""
    from gnomon.firewall.host.action_demo import run_push_demo
    from gnomon.firewall.model.errors import GnomonError

    result = run_push_demo(url)
    if as_json:
        echo_json({**{k: getattr(result, k) for k in result.__slots__}, "passed": result.passed})
    else:
        echo("A poisoned README.md asks the agent to push straight to main.")
        echo("The agent summarises it, cites its summary, and requests git_push (L4).")
        echo(f"request {result.request_id}: {result.status.upper()}")
        for reason in result.reasons:
            echo(f"  - {reason}")
        echo(f"trust report: {result.report_level.upper()}: {result.report_headline}")
        echo(result.verdict)
        echo(f"next: gnomon why {result.request_id} --url {url}")
    if not result.passed:
        raise GnomonError(result.verdict, hint="the push was not held: this is a bug")


approve_command = _resolution_command("approve")
deny_command = _resolution_command("deny")

__all__ = [
    "approve_command",
    "deny_command",
    "holds_command",
    "holds_resolve",
    "policy_sign",
    "policy_verify",
]
