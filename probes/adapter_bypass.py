"""Probe: no public SDK method reaches the store around the guard.

**Scenario.** For each wrapped SDK client (mem0's ``Memory``, offline; ``letta_client.Letta`` and
``zep_cloud.Zep`` on the in-process fake servers), the probe enumerates every public attribute of
the raw client, recursively through its resources (``client.agents.blocks``,
``zep.graph.episode``, …), and asks the guarded client for the same path, as an agent's tool code
would.

**Asserts.** For every public name of every raw SDK object, the guarded counterpart either
- raises :class:`~adapters.errors.BypassRefusedError` (refused), or
- is defined by the adapter: a method of an ``adapters.*`` class bound to the guarded object, or a
  guarded resource (an ``adapters.*`` object), which is walked the same way.
Nothing the guarded client hands out is an SDK object or a method bound to one (that would be a
pass-through), and at least one method of each store is guarded and at least one refused.

**Does not claim.** That each guarded method's body is correct (the adapter contract suite and
the other probes test that), or anything about code that keeps its own reference to the raw client
(``GuardedX(raw, ...)`` does not hide ``raw`` from the host that built it).
"""

from __future__ import annotations

import inspect
import os
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import httpx

from gnomon.adapters.errors import BypassRefusedError
from gnomon.firewall import open as open_firewall
from gnomon.firewall.host.firewall import Firewall
from gnomon.probes.runner import Checks, ProbeResult, ProbeSkipped, execute, project_for

NAME = "adapter_bypass"
TITLE = "every public SDK method is guarded or refused, none passes through"

MAX_DEPTH = 4


def _ours(value: Any) -> bool:
    """Defined by the adapter: an adapters.* object, or a method of one bound to it (or a
    classmethod of an adapters.* class, such as ``GuardedMemory.from_config``)."""
    if inspect.ismethod(value):
        owner = value.__self__
        cls = owner if isinstance(owner, type) else type(owner)
        return cls.__module__.startswith("gnomon.adapters.")
    return type(value).__module__.startswith("gnomon.adapters.")


def walk(raw: Any, guarded: Any, path: str, depth: int, out: dict[str, list[str]]) -> None:
    """Sort every public name of ``raw`` into out["guarded"|"refused"|"through"]."""
    for name in sorted(n for n in dir(raw) if not n.startswith("_")):
        where = f"{path}.{name}"
        try:
            value = getattr(guarded, name)
        except BypassRefusedError:
            out["refused"].append(where)
            continue
        if not _ours(value):
            out["through"].append(f"{where} ({type(value).__module__}.{type(value).__name__})")
            continue
        out["guarded"].append(where)
        if not callable(value) and depth < MAX_DEPTH:
            try:
                inner = getattr(raw, name)
            except Exception:  # a raw property that needs the network: nothing to compare
                continue
            walk(inner, value, where, depth + 1, out)


def _mem0(wall: Firewall, project: str) -> tuple[Any, Any]:
    if "mem0" not in sys.modules:
        os.environ.setdefault("MEM0_TELEMETRY", "false")
        os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="gnomon-probe-mem0-"))
    from gnomon.adapters.mem0 import GuardedMemory
    from gnomon.adapters.testing import offline_memory

    raw = offline_memory(tempfile.mkdtemp(prefix="gnomon-probe-mem0-"))
    return raw, GuardedMemory(raw, wall, project=project, actor="coder")


def _letta(wall: Firewall, project: str) -> tuple[Any, Any]:
    from letta_client import Letta

    from gnomon.adapters.fakes.letta import FakeLettaServer
    from gnomon.adapters.letta import GuardedLetta

    raw = Letta(
        base_url="http://letta.probe",
        max_retries=0,
        http_client=httpx.Client(transport=FakeLettaServer().transport()),
    )
    return raw, GuardedLetta(raw, wall, project=project, actor="coder")


def _zep(wall: Firewall, project: str) -> tuple[Any, Any]:
    from zep_cloud.client import Zep

    from gnomon.adapters.fakes.zep import FakeZepServer
    from gnomon.adapters.zep import GuardedZep

    raw = Zep(
        api_key="probe",
        base_url="http://zep.probe/api/v4",
        max_retries=0,
        httpx_client=httpx.Client(transport=FakeZepServer().transport()),
    )
    return raw, GuardedZep(raw, wall, project=project, actor="coder")


CLIENTS: dict[str, Callable[[Firewall, str], tuple[Any, Any]]] = {
    "mem0": _mem0,
    "letta": _letta,
    "zep": _zep,
}


def check(url: str, c: Checks) -> None:
    project = project_for(NAME)
    checked = 0
    with open_firewall(url) as wall:
        for store, make in CLIENTS.items():
            try:
                raw, guarded = make(wall, project)
            except ImportError:
                if os.environ.get("CI") == "true":
                    raise
                continue  # that SDK is not installed: nothing can bypass it
            out: dict[str, list[str]] = {"guarded": [], "refused": [], "through": []}
            walk(raw, guarded, store, 0, out)
            c.expect(
                not out["through"], f"{store}: no public SDK attribute passes through", got=out
            )
            c.expect(
                out["guarded"] and out["refused"],
                f"{store}: {len(out['guarded'])} names guarded, {len(out['refused'])} refused",
                got={k: len(v) for k, v in out.items()},
            )
            guarded.gnomon.close()
            checked += 1
    if checked == 0:  # no store SDK installed: nothing to bypass, nothing checked
        raise ProbeSkipped("pip install 'gnomon[mem0]' (or gnomon[letta], gnomon[zep])")


def run(url: str = "memory://") -> ProbeResult:
    return execute(NAME, TITLE, check, url)
