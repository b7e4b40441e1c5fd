"""A proxy restarted after its host died between an approval and the run resumes the approved
call: the real push server (a subprocess) runs it once, and the log records its outcome."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from gnomon import firewall
from gnomon.firewall.kernel import ApprovalSigner
from gnomon.firewall.kernel.ledger import read_ledger
from tests.test_mcp_proxy import _in_process


def test_a_restarted_proxy_resumes_an_approved_unclaimed_call(tmp_path: Path) -> None:
    async def script(new_proxy: Callable[[], Any], _up: Client) -> str:
        first = await new_proxy()
        approver = ApprovalSigner.from_file(tmp_path / "approver.key", "alice")
        kernel = first._kernel
        held = kernel.handle(first._session).request("push", {"branch": "main"})
        assert held.status == "held"
        (request,) = kernel.holds()

        def died(_request_id: str, **_: object) -> object:
            raise SystemExit("proxy killed between the approval and the run")

        kernel._execute_flow = died  # the claim and run of an approved request
        with pytest.raises(SystemExit):
            kernel.submit(approver.approve(request, now=first._wall.clock()))
        assert not (tmp_path / "pushed").exists()
        await new_proxy()  # the restart
        return str(held.request_id)

    request_id = _in_process(tmp_path, script)
    assert (tmp_path / "pushed").read_text().split() == ["main"]
    with firewall.open(f"sqlite:///{tmp_path}/g.db") as wall:
        assert read_ledger(wall.store).requests[request_id].status == "executed"
