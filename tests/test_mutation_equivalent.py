"""The committed equivalent-mutant list (bench/mutation_equivalent.toml) stays true.

No mutation run: mutmut generates each module's mutants (as bench/mutation.py does) and every
entry must still name one that exists and writes the recorded line, and every text-only function
must still be mutated. A stale entry would hide a real survivor under an old excuse. The table of
modules in pyproject.toml must name files that exist and test files that exist.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gnomon_bench_mutation", ROOT / "bench/mutation.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_every_module_and_test_file_of_the_table_exists(bench: ModuleType) -> None:
    table = bench.module_tests()
    assert "firewall/gate/grants.py" in table
    for module, tests in table.items():
        assert (ROOT / module).is_file(), module
        assert tests, f"{module} has no tests"
        for test in tests:
            assert (ROOT / test).is_file(), f"{module}: {test}"


def test_every_equivalent_entry_names_a_mutant_that_still_exists(bench: ModuleType) -> None:
    entries = bench.equivalents()
    functions = bench.text_only()
    assert entries or functions
    modules = {bench.module_name(module): module for module in bench.module_tests()}
    wanted = {e.mutant.partition(".x")[0] for e in entries} | {
        f.function.partition(".x")[0] for f in functions
    }
    unknown = wanted - set(modules)
    assert not unknown, f"entries for modules outside the table: {unknown}"
    generated: dict[str, str] = {}
    for name in wanted:
        generated.update(bench.generated_mutants(modules[name]))
    for entry in entries:
        assert entry.why.strip(), entry.mutant
        assert entry.mutant in generated, f"{entry.mutant} no longer exists: remove or renew it"
        assert generated[entry.mutant] == entry.line, (
            f"{entry.mutant} now writes {generated[entry.mutant]!r}, not {entry.line!r}"
        )
    mutated = {bench.function_of(name) for name in generated}
    for function in functions:
        assert function.why.strip(), function.function
        assert function.function in mutated, f"{function.function} is no longer mutated"
