"""A handful of AgentDojo pairs through bench/agentdojo.py (the full run is the benchmark).

The obedient agent succeeds at every tool-goal injection undefended; through the kernel none
succeeds, with the oracle approver or with nobody; the oracle keeps the user's task done; the
poison remembered in one session and obeyed from memory in the next does nothing.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("agentdojo")

BENCH = Path(__file__).resolve().parent.parent / "bench" / "agentdojo.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gnomon_bench_agentdojo", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return _bench()


def test_a_few_banking_pairs_undefended_and_through_the_kernel(bench: ModuleType) -> None:
    suite = bench.get_suite(bench.VERSION, "banking")
    undefended, _ = bench.run_pairs(suite, "undefended", "important_instructions", 4)
    assert undefended.attacked_tool_goal == undefended.tool_goal_pairs == 4
    for variant in ("oracle", "nohuman", "persistent"):
        tally, succeeded = bench.run_pairs(suite, variant, "important_instructions", 4)
        assert tally.tool_goal_pairs == 4 and tally.attacked_tool_goal == 0, (variant, succeeded)
        if variant == "oracle":
            assert tally.utility == 4 and tally.approvals > 0


def test_every_tool_has_a_contract_written_from_its_docstring(bench: ModuleType) -> None:
    for name in bench.SUITES:
        table = bench.registry(bench.get_suite(bench.VERSION, name))
        assert table.tools()  # a tool missing from CONTRACTS raises KeyError above
