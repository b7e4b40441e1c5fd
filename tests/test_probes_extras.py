"""A core install (no optional extras) runs ``gnomon probes run`` without false failures.

The installed command runs in a subprocess in which every optional SDK is unimportable, as after
``pip install gnomon``. A probe that needs one is reported as skipped, naming the exact extra
(``pip install 'gnomon[mem0]'``, printed as written, not eaten as rich markup); nothing is
reported FAILED, because a failure means an attack got through; the command exits 0. Under
``CI=true`` (where every extra is installed) the same missing extra is a failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OPTIONAL = (
    "mem0", "letta_client", "zep_cloud", "zep_python", "mcp", "psycopg", "psycopg_pool",
    "langchain_core", "langgraph", "agents", "pydantic_ai", "opentelemetry",
)  # fmt: skip
CORE_ONLY = (
    "import sys\n"
    f"for name in {OPTIONAL!r}:\n"
    "    sys.modules[name] = None  # import of it raises ImportError, as if not installed\n"
    "from gnomon.firewall.cli import main\n"
    "main()\n"
)


def _probes(*args: str, ci: bool = False) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = str(REPO)
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-c", CORE_ONLY, "probes", "run", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_probes_needing_an_absent_extra_are_skipped_naming_it() -> None:
    done = _probes("--json")
    data = json.loads(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    failed = [p for p in data["probes"] if not p["passed"] and not p["skipped"]]
    assert failed == [] and data["passed"] is True
    skipped = {p["name"]: p["skipped"] for p in data["probes"] if p["skipped"]}
    assert skipped["mem0_infer_join"] == "pip install 'gnomon[mem0]'"
    assert skipped["zep_context_leak"] == "pip install 'gnomon[zep]'"
    assert skipped["sidecar_boundary"] == "pip install 'gnomon[mcp]'"
    assert skipped["otel_ceiling"] == "pip install 'gnomon[otel]'"
    assert "gnomon[mem0]" in skipped["adapter_bypass"]
    assert all(p["passed"] for p in data["probes"] if not p["skipped"])

    text = _probes()
    assert text.returncode == 0 and "FAIL" not in text.stdout
    assert "pip install 'gnomon[mem0]'" in text.stdout  # the extra, not `pip install 'gnomon'`
    assert "pip install 'gnomon'" not in text.stdout


def test_under_ci_a_missing_extra_is_a_failure() -> None:
    done = _probes("--json", ci=True)
    data = json.loads(done.stdout)
    assert done.returncode == 1 and data["passed"] is False
    failed = {p["name"]: p["detail"] for p in data["probes"] if not p["passed"]}
    assert "pip install 'gnomon[mem0]'" in failed["mem0_infer_join"]
