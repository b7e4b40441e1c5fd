"""Mutation testing of the security core: which hand-made bugs does the suite miss?

mutmut changes one condition, operator or constant of a module at a time (a *mutant*) and runs
the tests that reach the changed function; a mutant under which every one of them still passes
*survived*: a careless refactor or a malicious patch of that kind would go unnoticed. Each
survivor is killed by an attack or boundary test, or recorded as equivalent (it cannot change
behaviour) in ``bench/mutation_equivalent.toml`` with one line of why.

The modules and the tests that guard each one are ``[tool.gnomon-mutation.tests]`` in
``pyproject.toml``; mutmut's own settings (what it copies into ``mutants/``) are
``[tool.mutmut]``. Run from the repository root (it needs ``mutmut``, in the dev extra)::

    nice -n 10 python bench/mutation.py --module firewall/gate/grants.py
    nice -n 10 python bench/mutation.py            # every module of the table, one by one

``--again`` runs only the last run's survivors of each module again (after adding tests).
Each module runs in its own mutmut process with one worker; the survivors that are not recorded
as equivalent go to ``bench/results/mutation-survivors.txt``, one block per mutant with its
diff, and the score per module is printed. Exit status 1 when any survivor is left.

``python bench/mutation.py --list firewall/gate/grants.py`` generates the module's mutants
without running a test and prints their names and the line each one changes (the fast check
in ``tests/test_mutation_equivalent.py`` uses the same generation).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import difflib
import json
import os
import subprocess
import sys
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EQUIVALENT_FILE = ROOT / "bench" / "mutation_equivalent.toml"
RESULTS_DIR = ROOT / "bench" / "results"
SURVIVORS_FILE = RESULTS_DIR / "mutation-survivors.txt"
#: mutmut's status names that mean "the tests did not catch it".
ALIVE = frozenset({"survived", "no tests", "suspicious", "not checked", "skipped"})


@dataclass(frozen=True)
class Equivalent:
    """A mutant recorded as unable to change behaviour: its name, the line it writes, and why."""

    mutant: str
    line: str
    why: str


def module_tests() -> dict[str, list[str]]:
    """The security core's modules (paths under the repository root) and their tests."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    table: dict[str, list[str]] = data["tool"]["gnomon-mutation"]["tests"]
    return table


@dataclass(frozen=True)
class TextOnly:
    """A function whose every mutant is recorded as equivalent: it only builds text for people
    (an error's wording), which no security decision reads."""

    function: str
    why: str


def equivalents() -> list[Equivalent]:
    """The committed list of equivalent mutants."""
    data = tomllib.loads(EQUIVALENT_FILE.read_text("utf-8"))
    return [Equivalent(e["mutant"], e["line"], e["why"]) for e in data.get("mutant", [])]


def text_only() -> list[TextOnly]:
    """The committed list of functions that only build text for people."""
    data = tomllib.loads(EQUIVALENT_FILE.read_text("utf-8"))
    return [TextOnly(e["function"], e["why"]) for e in data.get("text_only", [])]


def function_of(mutant: str) -> str:
    """``gnomon.m.x_f__mutmut_3`` -> ``gnomon.m.x_f``: the mangled function a mutant changes."""
    return mutant.partition("__mutmut_")[0]


def module_name(module: str) -> str:
    """``firewall/gate/grants.py`` -> ``gnomon.firewall.gate.grants`` (mutmut's prefix)."""
    return "gnomon." + module.removesuffix(".py").replace("/", ".")


def generated_mutants(module: str) -> dict[str, str]:
    """Every mutant mutmut makes of ``module`` (no test run): name -> the lines it writes."""
    from mutmut import configuration
    from mutmut.mutation.file_mutation import mutate_file_contents

    path = ROOT / module
    with contextlib.chdir(ROOT):  # mutmut reads [tool.mutmut] from the working directory
        configuration.reset_config()
        mutated = mutate_file_contents(str(path), path.read_text("utf-8"))
    lines = mutated.code.splitlines()
    bodies = {
        node.name: lines[node.lineno : node.end_lineno]  # the body, without the def line
        for node in ast.walk(ast.parse(mutated.code))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and "__mutmut_" in node.name
    }
    prefix = module_name(module)
    out = {}
    for name in mutated.mutant_names:
        original = bodies[name.partition("__mutmut_")[0] + "__mutmut_orig"]
        diff = list(difflib.unified_diff(original, bodies[name], lineterm="", n=0))[2:]
        added = [d[1:].strip() for d in diff if d.startswith("+")]
        removed = [d[1:].strip() for d in diff if d.startswith("-")]
        # a mutant that only deletes (an argument dropped) is named by what it drops
        out[f"{prefix}.{name}"] = "\n".join(added or ["deleted: " + r for r in removed])
    return out


def _configure(module: str, tests: list[str]) -> None:
    """Point mutmut's loaded configuration at one module and its tests."""
    from mutmut import configuration

    cfg = configuration.config()
    cfg.only_mutate = [f"gnomon/{module}"]
    cfg.pytest_add_cli_args_test_selection = list(tests)


def run_one(module: str, names: list[str]) -> int:
    """Run mutmut over ``module`` (only the mutants ``names`` when given) in this process
    (``--one``); its results stay in mutants/."""
    from mutmut.__main__ import _run

    tests = module_tests()[module]
    copy = ROOT / "mutants" / "gnomon" / module
    # mutmut copies a module it does not mutate with a fresh mtime, then takes that plain copy
    # for an already mutated one: every run starts from no copy (a full run from no results)
    copy.unlink(missing_ok=True)
    if not names:
        copy.with_name(copy.name + ".meta").unlink(missing_ok=True)
    _configure(module, tests)
    _run(names or [module_name(module) + ".*"], max_children=1)
    return 0


def _meta_results(module: str) -> dict[str, str]:
    """The status of each mutant of ``module`` in mutmut's meta file in mutants/ (only the
    module last run is current there: mutmut resets every result when the test selection
    changes, as it does from one module to the next)."""
    from mutmut.mutation.data import SourceFileMutationData
    from mutmut.stats import status_by_exit_code

    cwd = Path.cwd()
    os.chdir(ROOT)
    try:
        data = SourceFileMutationData(path=Path("gnomon") / module)
        data.load()
    finally:
        os.chdir(cwd)
    return {name: status_by_exit_code[code] for name, code in data.exit_code_by_key.items()}


def _saved(module: str) -> Path:
    return RESULTS_DIR / f"mutation-{module.removesuffix('.py').replace('/', '.')}.json"


def save_results(module: str, names: list[str]) -> None:
    """Keep the run just made of ``module``: every mutant's status, or with ``names`` (a rerun
    of those) the saved statuses with these replaced."""
    current = _meta_results(module)
    merged = results(module) if names else {}
    merged.update({n: current[n] for n in names} if names else current)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    _saved(module).write_text(json.dumps(merged, indent=1, sort_keys=True), "utf-8")


def results(module: str) -> dict[str, str]:
    """The saved status of each mutant of ``module`` from its last run (and reruns)."""
    path = _saved(module)
    if not path.exists():
        return _meta_results(module)
    saved: dict[str, str] = json.loads(path.read_text("utf-8"))
    return saved


def again(module: str) -> list[str]:
    """The last run's survivors of ``module`` not recorded as equivalent, those no test reached
    included (the test table may name more tests now)."""
    known = {e.mutant for e in equivalents()}
    texts = {t.function for t in text_only()}
    return sorted(
        n
        for n, s in results(module).items()
        if s in ALIVE and n not in known and function_of(n) not in texts
    )


def report(modules: list[str]) -> int:
    """Print the score per module, write the unexplained survivors, return how many."""
    known = {e.mutant: e for e in equivalents()}
    texts = {t.function for t in text_only()}
    lines: list[str] = []
    left = 0
    for module in modules:
        status = results(module)
        diffs = generated_mutants(module)
        counts = Counter(status.values())
        alive = sorted(n for n, s in status.items() if s in ALIVE)
        equivalent = [n for n in alive if n in known or function_of(n) in texts]
        survivors = [n for n in alive if n not in equivalent]
        killed = len(status) - len(alive)
        scored = len(status) - len(equivalent)
        score = 100.0 * killed / scored if scored else 100.0
        print(
            f"{module}: {len(status)} mutants, {killed} killed, {len(survivors)} survived, "
            f"{len(equivalent)} equivalent; score {score:.1f}% "
            f"({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))})"
        )
        for name in survivors:
            lines += [f"## {name} ({status[name]})", diffs.get(name, "(not generated)"), ""]
        left += len(survivors)
    SURVIVORS_FILE.parent.mkdir(parents=True, exist_ok=True)
    SURVIVORS_FILE.write_text("\n".join(lines), "utf-8")
    print(f"{left} survivor(s) not recorded as equivalent: {SURVIVORS_FILE.relative_to(ROOT)}")
    return left


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", action="append", help="e.g. firewall/gate/grants.py")
    parser.add_argument("--list", metavar="MODULE", help="list MODULE's mutants, run nothing")
    parser.add_argument("--report", action="store_true", help="report the last run, run nothing")
    parser.add_argument(
        "--again", action="store_true", help="run only the last run's survivors again"
    )
    parser.add_argument("--one", metavar="MODULE", help=argparse.SUPPRESS)
    parser.add_argument("names", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    if args.one:
        return run_one(args.one, args.names)
    if args.list:
        for name, line in generated_mutants(args.list).items():
            print(f"{name}\t{line.replace(chr(10), ' | ')}")
        return 0
    table = module_tests()
    modules = args.module or list(table)
    unknown = [m for m in modules if m not in table]
    if unknown:
        parser.error(f"not in [tool.gnomon-mutation.tests]: {', '.join(unknown)}")
    if not args.report:
        for module in modules:
            print(f"== {module}: {len(table[module])} test file(s)", flush=True)
            names = again(module) if args.again else []
            command = [sys.executable, __file__, "--one", module, *names]
            done = subprocess.run(command, check=False)
            if done.returncode != 0:
                print(f"mutmut failed on {module} (exit {done.returncode})", file=sys.stderr)
                return 2
            save_results(module, names)
    return 1 if report(modules) else 0


if __name__ == "__main__":
    sys.exit(main())
