"""``gnomon why <action>``: the beliefs and labels behind one action, and what became of it.

>>> from gnomon import firewall
>>> from gnomon.firewall.store.memory import MemoryStore
>>> explain_action(MemoryStore(), "act_nope") is None
True
"""

from __future__ import annotations

import json
from typing import Any

from gnomon.firewall.kernel.ledger import read_ledger, read_request
from gnomon.firewall.kernel.provenance import ShownArgument, shown
from gnomon.firewall.model.origin import Origin
from gnomon.firewall.store.base import Store


def explain_action(store: Store, ident: str) -> dict[str, Any] | None:
    """What the log says about the action or request ``ident`` (``None``: no such action)."""
    # a request id is one indexed read; an action id is looked up in the whole ledger
    state = read_request(store, ident) or read_ledger(store).find(ident)
    if state is None:
        return None
    p = state.proposal
    cites = [str(c) for c in p.get("cites") or ()]
    found = store.get_beliefs(cites)
    label = p.get("label")
    return {
        "request_id": state.request_id,
        "action_id": state.action_id,
        "tool": p.get("tool"),
        "level": p.get("level"),
        "verdict": p.get("outcome"),
        "rule": p.get("rule"),
        "status": state.status,
        "session": state.session_id,
        "project": state.project,
        "user": state.user,
        "reasons": list(state.reasons),
        "label": Origin.model_validate(label, strict=False).describe() if label else "nothing read",
        "inputs_digest": p.get("inputs_digest"),
        "policy_digest": p.get("policy_digest"),
        "arguments": [a.model_dump() for a in arguments(p)],
        "beliefs": [
            {
                "id": c,
                "statement": found[c].statement if c in found else None,
                "truth": found[c].truth_status.value if c in found else "missing",
                "security": found[c].security_status.value if c in found else "missing",
                "retrieval": found[c].retrieval_status.value if c in found else "missing",
                "origin": found[c].origin.describe() if c in found else "-",
            }
            for c in cites
        ],
        "preconditions": list(p.get("preconditions") or ()),
        "forgeries": [f"{f.get('kind')}: {f.get('detail')}" for f in state.forgeries],
        "timeline": [
            {"seq": e.seq, "kind": e.kind, "actor": e.actor, "at": e.at} for e in state.events
        ],
    }


def arguments(proposal: dict[str, Any]) -> list[ShownArgument]:
    """The canonical arguments of a proposal, each with the provenance of its value, secrets
    redacted: what the kernel recorded for the approver. A proposal without that record (no
    contract, so nothing was traced; or a log from before provenance) shows its arguments
    redacted, marked not traced."""
    recorded = proposal.get("provenance")
    if recorded:
        return [ShownArgument.model_validate(a) for a in recorded]
    args = proposal.get("args")
    if not isinstance(args, dict):
        return []
    untraced = "not traced (no contract, or recorded before argument provenance)"
    return [
        ShownArgument(
            name=str(k),
            value=shown(v if isinstance(v, str) else json.dumps(v, default=str)),
            provenance=untraced,
        )
        for k, v in args.items()
    ]


def render_action(doc: dict[str, Any]) -> list[str]:
    """Plain lines for the terminal (the CLI strips control characters from each)."""
    lines = [
        f"action {doc['action_id']} (request {doc['request_id']}): {doc['tool']} "
        f"[{doc['level']}] verdict={doc['verdict']} status={doc['status']}",
        f"  session {doc['session']} project {doc['project']} user {doc['user'] or '-'}",
        f"  inputs label: {doc['label']}",
        f"  inputs digest: {doc['inputs_digest']}  policy digest: {doc['policy_digest']}",
    ]
    lines.append("  arguments (what ran or would run, and where each value came from):")
    shown_args = [ShownArgument.model_validate(a) for a in doc["arguments"]]
    lines.extend(f"    {a.line()}" for a in shown_args) if shown_args else lines.append("    -")
    lines.append("  reasons:")
    lines.extend(f"    - {r}" for r in doc["reasons"]) if doc["reasons"] else lines.append("    -")
    lines.append("  rests on:" if doc["beliefs"] else "  rests on: no cited belief")
    for b in doc["beliefs"]:
        lines.append(
            f"    {b['id']} [{b['truth']}/{b['security']}/{b['retrieval']}] {b['origin']}: "
            f"{b['statement']}"
        )
    for f in doc["forgeries"]:
        lines.append(f"  FORGERY {f}")
    lines.append("  timeline:")
    lines.extend(f"    #{t['seq']} {t['at']} {t['kind']} by {t['actor']}" for t in doc["timeline"])
    return lines


__all__ = ["arguments", "explain_action", "render_action"]
