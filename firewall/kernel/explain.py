"""``gnomon why <action>``: the beliefs and labels behind one action, and what became of it.

>>> from gnomon import firewall
>>> from gnomon.firewall.store.memory import MemoryStore
>>> explain_action(MemoryStore(), "act_nope") is None
True
"""

from __future__ import annotations

from typing import Any

from gnomon.firewall.kernel.ledger import read_ledger, read_request
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


def render_action(doc: dict[str, Any]) -> list[str]:
    """Plain lines for the terminal (the CLI strips control characters from each)."""
    lines = [
        f"action {doc['action_id']} (request {doc['request_id']}): {doc['tool']} "
        f"[{doc['level']}] verdict={doc['verdict']} status={doc['status']}",
        f"  session {doc['session']} project {doc['project']} user {doc['user'] or '-'}",
        f"  inputs label: {doc['label']}",
        f"  inputs digest: {doc['inputs_digest']}  policy digest: {doc['policy_digest']}",
    ]
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


__all__ = ["explain_action", "render_action"]
