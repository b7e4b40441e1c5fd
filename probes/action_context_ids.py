"""Probe: context ids propagate into every action event.

**Scenario.** In a session (project, actor, user), an agent asks for a suggestion (allowed) and
a push (held); an attacker presents a forged approval; the approver approves; the push runs.

**Asserts.**
- Every kernel event of the story (proposed, held, forgery, accepted, executing, executed)
  carries the session's id, project and user, so ``gnomon report`` and ``why`` can follow it.

**Does not claim.** That events written by another host about a request that no session made
carry ids (there is no such request: it is refused as ``wrong_request``).
"""

from __future__ import annotations

from gnomon.firewall import open as open_firewall
from gnomon.firewall.kernel import ApprovalSigner
from gnomon.firewall.kernel.ledger import KINDS
from gnomon.firewall.model.errors import ForgedApprovalError
from gnomon.probes._kernel import host
from gnomon.probes.runner import Checks, ProbeResult, execute, project_for

NAME = "action_context_ids"
TITLE = "Every action event carries its session's context ids"


def check(url: str, c: Checks) -> None:
    project = project_for(NAME)
    with open_firewall(url) as wall:
        with host(wall) as h, wall.session(project=project, actor="a", user="carol") as s:
            actions = h.kernel.handle(s)
            actions.request("suggest", {"text": "hello"})
            held = actions.request(
                "git_push", {"repo": str(h.repo), "remote": "origin", "branch": "main"}
            )
            request = next(r for r in h.kernel.holds() if r.id == held.request_id)
            c.raises(
                ForgedApprovalError,
                "a forged approval is refused",
                h.kernel.submit,
                ApprovalSigner.generate("m").approve(request, now=wall.clock()),
            )
            done = h.kernel.submit(h.approver.approve(request, now=wall.clock()))
            c.expect(done.status == "executed", "the approved push executes", got=done.reasons)
        events = list(wall.store.events())
        ids = {
            e.payload["request_id"]
            for e in events
            if e.kind == "action.proposed" and e.session_id == s.id
        }
        mine = [e for e in events if e.kind in KINDS and e.payload.get("request_id") in ids]
        kinds = {e.kind for e in mine}
        wanted = {
            "action.proposed",
            "action.held",
            "approval.forgery",
            "approval.accepted",
            "action.executing",
            "action.executed",
        }
        c.expect(wanted <= kinds, "every step of the story was logged", got=sorted(kinds))
        wrong = [
            e.kind for e in mine if (e.session_id, e.project, e.user) != (s.id, project, "carol")
        ]
        c.expect(
            not wrong, "every action event carries the session id, project and user", got=wrong
        )


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
