"""MCP proxy benchmark: the latency ``gnomon mcp proxy`` adds to one tool call.

The same server (``tests/fixtures/mcp_push_server.py``, its L0 ``read_readme`` tool) is called
by the ``mcp`` SDK client directly and through the proxy (a signed default action policy, a
SQLite store), in the same run; the figure is p50(proxied) - p50(direct). Each proxied call is
a kernel proposal, the execution claim, the upstream call, the outcome and the recorded
observation (envelope + content), all committed to the store. Target: <= 2 ms.

Measured (2-core shared machine, fresh store, n=100): direct p50 4.6 ms, proxied p50 26.1 ms,
**added 21.5 ms: the target is missed**. A profile puts ~75% of a guarded call in
``firewall.kernel.ledger.read_ledger``, which the kernel folds over the *whole* log several
times per request (``_record_for``, ``_execute``), so the added latency grows with the log;
an indexed ledger (requests by id) is the fix, in the kernel, not the proxy.

    .venv/bin/python bench/mcp_proxy.py --n 200
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from firewall.grants import KeyPurpose, write_keypair
from firewall.kernel.actionpolicy import preset_bytes

ROOT = Path(__file__).resolve().parent.parent
SERVER = [sys.executable, str(ROOT / "tests" / "fixtures" / "mcp_push_server.py")]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def setup(folder: Path) -> Path:
    (folder / "actions.yaml").write_bytes(preset_bytes("default"))
    key, _ = write_keypair(folder, "operator", purpose=KeyPurpose.POLICY)
    sign = [sys.executable, "-m", "firewall.cli", "policy", "sign", str(folder / "actions.yaml")]
    subprocess.run([*sign, "--key", str(key)], check=True, env=ENV, capture_output=True)
    config = folder / "proxy.yaml"
    config.write_text(
        f"server: bench\nstore: sqlite:///{folder}/g.db\nproject: bench\n"
        "policy: actions.yaml\noperator_keys: [operator.pub]\n"
        "tools:\n  read_readme: {category: read, level: L0}\n"
    )
    return config


async def timed(
    direct: StdioServerParameters, proxied: StdioServerParameters, n: int
) -> tuple[list[float], list[float]]:
    """``n`` direct and ``n`` proxied calls, interleaved, so both see the same machine load."""
    async with Client(direct) as plain, Client(proxied) as guarded:
        for _ in range(5):  # warm up
            await plain.call_tool("read_readme", {})
            await guarded.call_tool("read_readme", {})
        out: tuple[list[float], list[float]] = ([], [])
        for _ in range(n):
            for client, times in ((plain, out[0]), (guarded, out[1])):
                start = time.perf_counter()
                result = await client.call_tool("read_readme", {})
                times.append(time.perf_counter() - start)
                assert not result.is_error
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    n = parser.parse_args().n
    folder = Path(tempfile.mkdtemp())
    config = setup(folder)
    direct = StdioServerParameters(command=SERVER[0], args=[*SERVER[1:], str(folder)], env=ENV)
    proxied = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "firewall.cli",
            "mcp",
            "proxy",
            "--config",
            str(config),
            "--",
            *SERVER,
            str(folder),
        ],
        env=ENV,
    )
    d, p = anyio.run(timed, direct, proxied, n)
    d50, p50 = statistics.median(d) * 1e3, statistics.median(p) * 1e3
    print(f"direct  p50 {d50:.2f} ms")
    print(f"proxied p50 {p50:.2f} ms")
    print(f"added   p50 {p50 - d50:.2f} ms (target <= 2 ms) over {n} calls")


if __name__ == "__main__":
    main()
