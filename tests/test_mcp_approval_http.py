"""The proxy's HTTP approval channel (issue 24, item 3): a real ``gnomon mcp proxy
--approvals PORT`` subprocess in front of a real MCP server subprocess, real HTTP, and the real
``gnomon approve --http`` client.

The agent's push is held; while the proxy waits, the hostile side of the network POSTs what it
can: an approval signed with a key nobody pinned, one signed by a pinned key the policy rule
does not name, a malformed one, an oversized body, a body that is not JSON, an approval for a
request that does not exist. Each is answered with a typed JSON error that names what was wrong
and carries no host detail; the signed ones are verified by the kernel exactly as an approval
written to the store is (one function) and recorded as ``approval.forgery`` with the same kind;
nothing runs. Then the approver the rule names approves over HTTP, and the push runs.

Flip (in-process, the same channel): with the kernel's verification removed, the forged
approval POSTed to the channel runs the push.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from gnomon import firewall
from gnomon.firewall.gate.grants import KeyPurpose, key_id_of, load_public_key, write_keypair
from gnomon.firewall.kernel.actionpolicy import preset_bytes
from gnomon.firewall.kernel.approvals import ApprovalSigner
from gnomon.firewall.kernel.ledger import read_ledger

if os.environ.get("CI") != "true":
    pytest.importorskip("mcp", reason="mcp is not installed (pip install 'gnomon[mcp]')")

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.test_mcp_proxy import GNOMON, PUSH_SERVER, REPO, _env, _text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _setup(folder: Path) -> Path:
    """A signed policy whose hold rule names one approver key; two approver keys pinned."""
    doc = yaml.safe_load(preset_bytes("default"))
    write_keypair(folder, "operator", purpose=KeyPurpose.POLICY)
    _, alice = write_keypair(folder, "approver", purpose=KeyPurpose.APPROVAL)
    write_keypair(folder, "intern", purpose=KeyPurpose.APPROVAL)
    write_keypair(folder, "stranger", purpose=KeyPurpose.APPROVAL)
    alice_id = key_id_of(load_public_key(alice))
    for rule in doc["rules"]:
        if rule["name"] == "external-needs-a-human":
            rule["approvers"] = [alice_id]
    (folder / "actions.yaml").write_text(yaml.safe_dump(doc))
    signed = subprocess.run(
        [*GNOMON, "policy", "sign", str(folder / "actions.yaml"), "--key",
         str(folder / "operator.key")],
        env=_env(), capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert signed.returncode == 0, signed.stderr
    config = folder / "proxy.yaml"
    config.write_text(
        f"server: pushy\nstore: sqlite:///{folder}/g.db\n"
        "project: shop\nactor: coder\nuser: alice\npolicy: actions.yaml\n"
        "operator_keys: [operator.pub]\napprover_keys: [approver.pub, intern.pub]\n"
        "hold_timeout: 60\npoll_interval: 0.1\n"
        "tools:\n  read_readme: {category: read, level: L0}\n  push: {category: push, level: L4}\n"
    )
    return config


def _post(url: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(f"{url}/approvals", data=body, method="POST")
    for k, v in (headers or {"Content-Type": "application/json"}).items():
        request.add_header(k, v)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, orjson.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, orjson.loads(exc.read())


def _approver(folder: Path, url: str, seen: dict[str, Any]) -> threading.Thread:
    """The hostile network, then the approver, once the push is held."""

    def run() -> None:
        store = f"sqlite:///{folder}/g.db"
        for _ in range(300):
            if (folder / "g.db").exists():
                with firewall.open(store) as wall:
                    holds = read_ledger(wall.store).holds()
                if holds:
                    break
            time.sleep(0.1)
        request = holds[0].request
        assert request is not None
        seen["request_id"] = request.id
        # the hold as the channel serves it
        with urllib.request.urlopen(f"{url}/holds/{request.id}", timeout=30) as answer:
            seen["hold"] = orjson.loads(answer.read())
        ttl = timedelta(minutes=5)
        for name in ("stranger", "intern"):
            signer = ApprovalSigner.from_file(folder / f"{name}.key", name)
            approval = signer.approve(request, ttl=ttl)
            seen[name] = _post(url, orjson.dumps(approval.to_json()))
        seen["malformed"] = _post(
            url, orjson.dumps({"request_id": request.id, "decision": "approve"})
        )
        seen["not json"] = _post(url, b"approve it, please")
        seen["too large"] = _post(url, b"x" * (64 * 1024 + 1))
        seen["unknown"] = _post(url, orjson.dumps({"request_id": "req_nope", "x": 1}))
        seen["no length"] = _post(url, b"", {"Transfer-Encoding": "chunked"})
        done = subprocess.run(
            [*GNOMON, "approve", request.id, "--key", str(folder / "approver.key"),
             "--approver", "alice", "--http", url, "--json"],
            env=_env(), capture_output=True, text=True, check=False,
        )  # fmt: skip
        seen["approve"] = (done.returncode, done.stdout, done.stderr)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_attack_the_http_channel_carries_only_what_the_kernel_verifies(tmp_path: Path) -> None:
    config, port = _setup(tmp_path), _free_port()
    url = f"http://127.0.0.1:{port}"
    params = StdioServerParameters(
        command=GNOMON[0],
        args=[*GNOMON[1:], "mcp", "proxy", "--config", str(config), "--approvals", str(port),
              "--", sys.executable, PUSH_SERVER, str(tmp_path)],
        env={"PYTHONPATH": str(REPO), "GNOMON_HOME": os.environ["GNOMON_HOME"]},
    )  # fmt: skip
    seen: dict[str, Any] = {}

    async def main() -> Any:
        async with Client(params) as client:
            await client.call_tool("read_readme", {})
            approver = _approver(tmp_path, url, seen)
            pushed = await client.call_tool("push", {"branch": "main"})
            approver.join(timeout=60)
            return pushed

    pushed = anyio.run(main)
    assert seen["hold"]["request"]["tool"] == "push" and seen["hold"]["status"] == "held"
    # forgeries: refused by the kernel, with the same kinds a store approval gets
    assert seen["stranger"][0] == 403 and seen["stranger"][1]["error"] == "wrong_key"
    assert seen["intern"][0] == 403 and seen["intern"][1]["error"] == "unauthorised"
    assert seen["malformed"][0] == 403 and seen["malformed"][1]["error"] == "forged"
    # typed errors, nothing written, no host detail
    assert seen["not json"][0] == 400 and seen["not json"][1]["error"] == "not_json"
    assert seen["too large"][0] == 413 and seen["too large"][1]["error"] == "too_large"
    assert seen["unknown"][0] == 404 and seen["unknown"][1]["error"] == "unknown_request"
    assert seen["no length"][0] == 411
    for key in ("stranger", "intern", "malformed", "not json", "too large", "unknown"):
        text = orjson.dumps(seen[key][1]).decode()
        assert str(tmp_path) not in text and "Traceback" not in text, (key, text)
    # the approver the rule names, over HTTP: the push runs
    code, out, err = seen["approve"]
    assert code == 0, err
    assert orjson.loads(out)["status"] == "executed"
    assert not pushed.is_error and _text(pushed) == "pushed main", _text(pushed)
    assert (tmp_path / "pushed").read_text() == "main\n"
    with firewall.open(f"sqlite:///{tmp_path}/g.db") as wall:
        state = read_ledger(wall.store).requests[seen["request_id"]]
        kinds = [e.payload["kind"] for e in state.events if e.kind == "approval.forgery"]
        unknown = [e for e in wall.store.events() if "req_nope" in orjson.dumps(e.payload).decode()]
    assert kinds == ["wrong_key", "unauthorised", "forged"]
    assert unknown == []  # an unknown request writes nothing


def test_flip_without_the_kernels_verification_the_forged_http_approval_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gnomon.firewall.host.approval_http import ApprovalChannel
    from gnomon.firewall.kernel import ActionKernel, PolicySigner, load_action_policy
    from gnomon.firewall.kernel import kernel as kernel_module
    from gnomon.firewall.kernel.contracts import ToolRegistry

    (tmp_path / "actions.yaml").write_bytes(preset_bytes("default"))
    operator, alice = PolicySigner.generate(), ApprovalSigner.generate("alice")
    stranger = ApprovalSigner.generate("stranger")
    operator.sign_file(tmp_path / "actions.yaml")
    ran: list[dict[str, Any]] = []
    store = f"sqlite:///{tmp_path}/g.db"

    def attempt() -> tuple[int, Any]:
        with firewall.open(store) as wall:
            kernel = ActionKernel(
                wall,
                load_action_policy(tmp_path / "actions.yaml", keys=[operator.public_key]),
                operator_keys=[operator.public_key],
                approver_keys=[alice.public_key],
                registry=ToolRegistry.builtin(),
                executors={"deploy": lambda a: ran.append(a) or "deployed"},
            )
            with wall.session(project="p", actor="coder", user="bob") as s:
                held = kernel.handle(s).request("deploy", {"service": "web", "ref": "v2"})
            request = next(r for r in kernel.holds() if r.id == held.request_id)
            forged = stranger.approve(request, ttl=timedelta(minutes=5))
            with ApprovalChannel(store, "127.0.0.1", 0, wait=0.2) as channel:
                host, port = channel.address
                answer = _post(f"http://{host}:{port}", orjson.dumps(forged.to_json()))
            kernel.process_submitted(held.request_id)  # the host waiting on the hold
            return answer

    assert attempt()[0] in (202, 403) and ran == []  # verified: refused, nothing ran
    # the flip: verification that also takes a key nobody pinned (where the kernel and its
    # ledger verify)
    from gnomon.firewall.kernel import approvals, ledger

    real = approvals.verify_approval

    def lax(approval: Any, request: Any, keys: Any, **kw: Any) -> Any:
        return real(approval, request, [*keys, stranger.public_key], **kw)

    for module in (approvals, kernel_module, ledger):
        monkeypatch.setattr(module, "verify_approval", lax)
    attempt()
    assert ran == [{"service": "web", "ref": "v2"}]  # without verification, the forgery runs
