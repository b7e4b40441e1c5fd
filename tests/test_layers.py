"""The package's shape: the core's layers only look down, and everything imports through ``gnomon``.

* ``firewall/`` is split into layers (``shared/DESIGN.md``), lowest first: model, gate, log,
  store, audit, kernel, host, cli. A module's top-level imports may name its own layer or a lower
  one; only host and cli may import the package facade (``gnomon.firewall`` itself). Imports
  inside a function or under ``TYPE_CHECKING`` are not dependencies of the module and are not
  counted.
* The distribution installs one top-level package, ``gnomon``: no file of the repository imports
  ``firewall``, ``adapters``, ``probes`` or ``policies`` as top-level names (in a checkout those
  would load a second copy of every module next to ``gnomon.firewall``), and the wheel holds
  nothing else, so it cannot overwrite another distribution's ``adapters/``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("model", "gate", "log", "store", "audit", "kernel", "host", "cli")
FACADE_USERS = ("host", "cli")
TOP_LEVEL = ("firewall", "adapters", "probes", "policies", "tools")


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] != ["gnomon", "firewall"]:
        return None
    return parts[2] if len(parts) > 2 and parts[2] in LAYERS else ""


def _top_level_imports(tree: ast.Module) -> list[str]:
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module in ("gnomon", "gnomon.firewall"):
                names += [f"{node.module}.{a.name}" for a in node.names]
            else:
                names.append(node.module)
        elif isinstance(node, ast.Import):
            names += [a.name for a in node.names]
    return names


def layering_violations(module: str, source: str) -> list[str]:
    """Each top-level import of ``module`` that reaches above its layer, as a message."""
    own = _layer(module)
    if not own:
        return []
    found = []
    for target in _top_level_imports(ast.parse(source)):
        theirs = _layer(target)
        if theirs is None:
            continue
        if theirs == "" and target.split(".")[2:3] != ["__about__"]:
            if own not in FACADE_USERS:
                found.append(f"{module} imports the facade {target} (only host and cli may)")
        elif theirs and LAYERS.index(theirs) > LAYERS.index(own):
            found.append(f"{module} ({own}) imports {target} ({theirs}), a higher layer")
    return found


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted((ROOT / "firewall").rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        name = ".".join(("gnomon", *rel.parts))
        out.append((name.removesuffix(".__init__"), path))
    return out


def test_every_core_module_lives_in_a_layer() -> None:
    loose = [
        name
        for name, _ in _modules()
        if _layer(name) == "" and name not in ("gnomon.firewall", "gnomon.firewall.__about__")
    ]
    assert loose == []


def test_layers_only_import_downward() -> None:
    violations = [
        v for name, path in _modules() for v in layering_violations(name, path.read_text())
    ]
    assert violations == []


def test_the_layering_check_catches_an_upward_import() -> None:
    # the check itself can fail: a gate module importing the store, or the facade, is caught,
    # while the same import inside a function (a late, local dependency) is not counted
    up = "from gnomon.firewall.store.base import Store\n"
    assert layering_violations("gnomon.firewall.gate.policy", up)
    assert layering_violations("gnomon.firewall.model.chain", "from gnomon import firewall\n")
    assert layering_violations("gnomon.firewall.log.events", "import gnomon.firewall\n")
    assert layering_violations(
        "gnomon.firewall.kernel.kernel", "from gnomon.firewall import open\n"
    )
    assert layering_violations("gnomon.firewall.store.base", "def f():\n    " + up) == []
    assert layering_violations("gnomon.firewall.host.session", up) == []
    assert layering_violations("gnomon.firewall.cli.admin", "from gnomon import firewall\n") == []


def _python_files() -> list[Path]:
    tracked = subprocess.run(
        ["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [ROOT / f for f in tracked if not f.startswith("gnomon/")]


def test_nothing_imports_the_folders_as_top_level_packages() -> None:
    offenders = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            offenders += [
                f"{path.relative_to(ROOT)}:{node.lineno} {n}"
                for n in names
                if n.split(".")[0] in TOP_LEVEL
            ]
    assert offenders == []


def test_the_wheel_installs_one_top_level_package(tmp_path: Path) -> None:
    from hatchling.builders.wheel import WheelBuilder

    (wheel,) = (Path(p) for p in WheelBuilder(str(ROOT)).build(directory=str(tmp_path)))
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"gnomon"}
    for folder in TOP_LEVEL:
        assert f"gnomon/{folder}/__init__.py" in names
    assert "gnomon/firewall/host/session.py" in names
    assert "gnomon/policies/default.yaml" in names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "gnomon = gnomon.firewall.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()


def test_the_installed_command_runs_from_the_namespace() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gnomon.firewall.cli", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Usage" in done.stdout
