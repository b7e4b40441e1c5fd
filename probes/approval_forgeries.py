"""Probe: forged, replayed, wrong-key and wrong-digest approvals never execute, in process and
through the store.

**Scenario.** An agent's push to ``main`` is held. The attacker presents: a genuine approval
with one field edited, an approval signed by their own key, a genuine approval of *another*
held push (to ``release``) relabelled, and an approval the approver signed over other inputs.
Then, through the out-of-process channel (an ``approval.submitted`` event in the store, as
``gnomon approve`` writes it), a forged approval. Finally the genuine approval is used, then
replayed.

**Asserts.**
- None of the bad approvals executes, each raises ForgedApprovalError and leaves an
  ``approval.forgery`` event (wrong digest: ``wrong_digest``).
- The forgery written through the store is picked up, refused and recorded.
- The genuine approval executes once; replaying it is refused as ``replayed``.

**Does not claim.** That a stolen approver key is detected.
"""

from __future__ import annotations

from gnomon.firewall import open as open_firewall
from gnomon.firewall.kernel import ApprovalSigner
from gnomon.firewall.kernel.ledger import post_approval
from gnomon.firewall.model.errors import ForgedApprovalError
from gnomon.probes._kernel import host
from gnomon.probes.runner import Checks, ProbeResult, execute, project_for

NAME = "approval_forgeries"
TITLE = "Forged, replayed, wrong-key and wrong-digest approvals never execute (also via the store)"


def check(url: str, c: Checks) -> None:
    project = project_for(NAME)
    with open_firewall(url) as wall:
        executors = {"git_push": lambda args: f"pushed {args['branch']}"}
        with host(wall, executors=executors) as h, wall.session(project=project, actor="a") as s:
            ran: list[str] = []
            h.kernel._executors["git_push"] = lambda args: ran.append(str(args["branch"]))
            actions = h.kernel.handle(s)
            base = {"repo": str(h.repo), "remote": "origin", "branch": "main"}
            main = actions.request("git_push", base)
            release = actions.request("git_push", {**base, "branch": "release"})
            holds = {r.id: r for r in h.kernel.holds()}
            req, other = holds[main.request_id], holds[release.request_id]
            now = wall.clock()
            good = h.approver.approve(req, now=now)
            bad = {
                "an edited approval": good.model_copy(update={"approver": "mallory"}),
                "an approval by an unpinned key": ApprovalSigner.generate("m").approve(
                    req, now=now
                ),
                "another request's approval": h.approver.approve(other, now=now).model_copy(
                    update={"request_id": req.id, "action_id": req.action_id}
                ),
            }
            for what, approval in bad.items():
                c.raises(ForgedApprovalError, f"{what} does not execute", h.kernel.submit, approval)
            wrong = h.approver.approve(
                req.model_copy(update={"inputs_digest": other.inputs_digest}), now=now
            )
            err = c.raises(
                ForgedApprovalError,
                "a wrong-digest approval does not execute",
                h.kernel.submit,
                wrong,
            )
            c.expect(err.kind == "wrong_digest", "it is refused as wrong_digest", got=err.kind)
            post_approval(wall.store, good.model_copy(update={"nonce": "0" * 32}), now=now)
            results = h.kernel.process_submitted()
            c.expect(
                any(isinstance(r, ForgedApprovalError) for r in results),
                "a forgery through the store is refused when the host picks it up",
                got=results,
            )
            c.expect(ran == [], "no bad approval executed the push", got=ran)
            forgeries = [
                e
                for e in wall.store.events()
                if e.kind == "approval.forgery" and e.project == project
            ]
            c.expect(
                len(forgeries) == len(bad) + 2,
                "each bad approval left a forgery event",
                got=len(forgeries),
            )
            h.kernel.submit(good)
            c.expect(ran == ["main"], "the genuine approval executes the held push once", got=ran)
            replay = c.raises(
                ForgedApprovalError, "a replayed approval is refused", h.kernel.submit, good
            )
            c.expect(replay.kind == "replayed", "it is refused as replayed", got=replay.kind)
            c.expect(ran == ["main"], "the replay ran nothing", got=ran)


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
