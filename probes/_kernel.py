"""Shared set-up of the action-kernel probes: a host with a freshly signed action policy.

Keys are generated at run time (nothing secret is committed); the policy is the shipped
``policies/actions/default.yaml`` preset, written to a temporary file and signed there.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gnomon.firewall.host.firewall import Firewall
from gnomon.firewall.kernel import ActionKernel, ApprovalSigner, PolicySigner, load_action_policy
from gnomon.firewall.kernel.actionpolicy import preset_bytes
from gnomon.firewall.kernel.approvals import ApprovalRequest
from gnomon.firewall.kernel.decide import Arbiter


@dataclass
class Host:
    kernel: ActionKernel
    approver: ApprovalSigner
    operator: PolicySigner
    folder: Path
    #: a real git repository with one commit (the push target)
    repo: Path
    ran: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def make_repo(folder: Path) -> Path:
    """A real git repository ``folder/repo`` with one commit on ``main`` and a remote
    ``origin`` (a bare repository ``folder/origin.git``): what a push is pinned to."""
    repo, origin = folder / "repo", folder / "origin.git"
    ident = ("-c", "user.email=probe@gnomon", "-c", "user.name=probe")
    for args in (
        ["git", "init", "-q", "--bare", "-b", "main", str(origin)],
        ["git", "init", "-q", "-b", "main", str(repo)],
        ["git", "-C", str(repo), *ident, "commit", "-q", "--allow-empty", "-m", "init"],
        ["git", "-C", str(repo), "remote", "add", "origin", str(origin)],
    ):
        subprocess.run(args, check=True, capture_output=True)
    return repo


@contextmanager
def host(
    wall: Firewall,
    *,
    policy_text: bytes | None = None,
    resolver: Callable[[ApprovalRequest], Any] | None = None,
    executors: Mapping[str, Callable[[dict[str, Any]], object]] | None = None,
    arbiters: Sequence[Arbiter] = (),
) -> Iterator[Host]:
    with tempfile.TemporaryDirectory(prefix="gnomon-kernel-") as tmp:
        folder = Path(tmp)
        path = folder / "actions.yaml"
        path.write_bytes(policy_text if policy_text is not None else preset_bytes("default"))
        repo = make_repo(folder)
        operator = PolicySigner.generate()
        operator.sign_file(path)
        approver = ApprovalSigner.generate("alice")
        ran: list[tuple[str, dict[str, Any]]] = []

        def recorder(tool: str) -> Callable[[dict[str, Any]], object]:
            def run(args: dict[str, Any]) -> object:
                ran.append((tool, args))
                return f"{tool} done"

            return run

        tools = ("suggest", "read_file", "write_file", "git_commit", "git_push", "deploy")
        chosen = dict(executors) if executors is not None else {t: recorder(t) for t in tools}
        kernel = ActionKernel(
            wall,
            load_action_policy(path, keys=[operator.public_key]),
            operator_keys=[operator.public_key],
            approver_keys=[approver.public_key],
            executors=chosen,
            resolver=resolver,
            arbiters=arbiters,
        )
        yield Host(kernel, approver, operator, folder, repo, ran)


__all__ = ["Host", "host"]
