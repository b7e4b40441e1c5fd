"""``gnomon doctor``: what is wrong with an installation, each finding with its fix.

A memory firewall whose store an agent can edit with ``sqlite3`` is no firewall, so the checks
are about reach: the store and the keys must live outside any git working tree (a coding agent
runs its shell commands there), be writable by their owner only, the pinned operator keys and the
sealing key must be there, and every agent configuration ``gnomon setup`` wrote must still route
the agent's tools through ``gnomon mcp proxy``.

A finding is a ``problem`` (the command exits 1) or a ``warning`` (it reports and exits 0): a
store left at the old ``./.gnomon/gnomon.db`` default, or an MCP server the agent reaches
directly, are warnings.

>>> import tempfile
>>> folder = Path(tempfile.mkdtemp())
>>> (folder / ".git").mkdir()
>>> (folder / "src").mkdir()
>>> git_worktree(folder / "src" / "store.db") == folder
True
"""

from __future__ import annotations

import json
import stat
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from gnomon.firewall.host import agent_setup
from gnomon.firewall.host.config import sqlite_path, trusted_keys_dir
from gnomon.firewall.store import paths
from gnomon.firewall.store.sealing import file_identity, store_key_path

Severity = Literal["problem", "warning"]
#: Where ``gnomon setup`` records the agent configurations it wrote (in the data directory).
SETUP_RECORD = "agents.json"


@dataclass(frozen=True)
class Finding:
    """One thing wrong, in plain words, and the command or step that fixes it."""

    check: str
    problem: str
    fix: str
    severity: Severity = "problem"


@dataclass
class Diagnosis:
    """Every finding of one ``gnomon doctor`` run and what it looked at."""

    findings: list[Finding]
    checked: dict[str, str]

    @property
    def healthy(self) -> bool:
        """No problem found (warnings allowed)."""
        return not any(f.severity == "problem" for f in self.findings)

    def to_json(self) -> dict[str, object]:
        """The ``--json`` form."""
        return {
            "healthy": self.healthy,
            "checked": self.checked,
            "findings": [asdict(f) for f in self.findings],
        }


def git_worktree(path: Path) -> Path | None:
    """The git working tree ``path`` lies in (the folder holding ``.git``), if any."""
    for folder in [path.absolute(), *path.absolute().parents]:
        if (folder / ".git").exists():
            return folder
    return None


def sealing_key_dir() -> Path:
    """Where the store's sealing key is kept (``data_dir()/seal``): the one place doctor looks."""
    return paths.data_dir() / "seal"


def setup_record() -> Path:
    """The file listing the agent configurations ``gnomon setup`` wrote."""
    return paths.data_dir() / SETUP_RECORD


def recorded_setups() -> list[tuple[agent_setup.Agent, Path]]:
    """The ``(agent, config file)`` pairs ``gnomon setup`` recorded, oldest first."""
    try:
        entries = json.loads(setup_record().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    found: list[tuple[agent_setup.Agent, Path]] = []
    for entry in entries if isinstance(entries, list) else []:
        agent = entry.get("agent") if isinstance(entry, dict) else None
        if agent in agent_setup.AGENTS and isinstance(entry.get("path"), str):
            found.append((agent, Path(entry["path"])))
    return found


def _reach(check: str, path: Path, what: str, *, private: bool) -> list[Finding]:
    """``path`` outside any git working tree, and :func:`_mode` of it."""
    tree = git_worktree(path)
    inside = [
        Finding(
            check,
            f"{what} {path} is inside the git working tree {tree}, where a coding agent runs "
            "its shell commands",
            f"move it to the user data directory {paths.data_dir()} (or set $GNOMON_HOME to a "
            "folder outside any repository)",
        )
    ]
    return (inside if tree is not None else []) + _mode(check, path, what, private=private)


def _mode(check: str, path: Path, what: str, *, private: bool) -> list[Finding]:
    """``path`` writable (and, if ``private``, readable) by its owner only."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return []
    loose = 0o077 if private else 0o022
    if not mode & loose:
        return []
    want = (0o700 if path.is_dir() else 0o600) if private else mode & ~0o022
    who = "others can read or write it" if private else "others can write it"
    return [Finding(check, f"{what} {path} has mode {mode:o}: {who}", f"chmod {want:o} {path}")]


def check_store(url: str) -> list[Finding]:
    """The store a command opens by default: present, out of the agent's reach."""
    path = sqlite_path(url)
    if path is None:
        return []  # a server store (PostgreSQL) or memory://: its access is the server's
    if not path.exists():
        return [Finding("store", f"no Gnomon store at {path}", "run `gnomon init` to create it")]
    findings = _reach("store", path, "the store", private=True)
    for companion in (Path(f"{path}-wal"), Path(f"{path}-shm")):
        findings += _mode("store", companion, "the store's journal", private=True)
    return findings + _mode("store", path.parent, "the store's folder", private=False)


def check_legacy(cwd: Path) -> list[Finding]:
    """A store at the old default ``./.gnomon/gnomon.db`` (it still opens with --url)."""
    old = cwd / paths.LEGACY_DIR / "gnomon.db"
    if not old.exists():
        return []
    return [
        Finding(
            "legacy store",
            f"a store at the old default {old.absolute()} sits in the working directory, where "
            "an agent can edit it; commands no longer open it unless named with --url "
            f"sqlite:///{old.absolute()}",
            f"move it into the data directory: mv {old.absolute()} {paths.store_file()} "
            "(and its -wal/-shm files), then run `gnomon doctor` again",
            severity="warning",
        )
    ]


def check_data_dir() -> list[Finding]:
    """The data directory itself: owner-only, outside any repository."""
    home = paths.data_dir()
    if not home.exists():
        return []
    return _reach("data directory", home, "the data directory", private=True)


def check_operator_keys(trusted: Path, keys: Path) -> list[Finding]:
    """Pinned operator keys present and unwritable by others; private keys unreadable."""
    pinned = sorted(trusted.glob("*.pub")) if trusted.is_dir() else []
    if not pinned:
        return [
            Finding(
                "operator keys",
                f"no pinned operator keys in {trusted}: grants, approvals and signed policies "
                "cannot be checked",
                "run `gnomon keys generate` (it writes a key pair and pins its public key)",
            )
        ]
    findings = _reach("operator keys", trusted, "the pinned-keys folder", private=False)
    for key in pinned:
        findings += _reach("operator keys", key, "the pinned key", private=False)
    for private in sorted(keys.glob("*.key")) if keys.is_dir() else []:
        findings += _reach("operator keys", private, "the private key", private=True)
    return findings


def check_sealing_key(folder: Path | None = None, key: Path | None = None) -> list[Finding]:
    """The sealing key the host authenticates every event with: ``key`` if the caller knows
    the store's own key file, else any ``*.key`` in ``folder`` (default :func:`sealing_key_dir`).
    Key files must be owner-only; an auditor's ``*.verify`` key left on the host is a warning.
    """
    folder = folder if folder is not None else (key.parent if key else sealing_key_dir())
    keys = [key] if key is not None else sorted(folder.glob("*.key")) if folder.is_dir() else []
    keys = [k for k in keys if k.is_file()]
    if not keys:
        return [
            Finding(
                "sealing key",
                f"no sealing key in {key or folder}: the store cannot seal what it writes, so it "
                "is read-only for authority (no channels, grants, approvals or executions)",
                "a new store gets its key when `gnomon init` creates it; for an existing store "
                f"restore its key file into {folder} from your backup",
            )
        ]
    findings = _reach("sealing key", folder, "the sealing-key folder", private=True)
    for file in keys:
        findings += _reach("sealing key", file, "the sealing key", private=True)
    for verify in sorted(folder.glob("*.verify")):
        findings.append(
            Finding(
                "sealing key",
                f"the auditor's verification key {verify} is still on the host: whoever holds it "
                "can check the seals, and it belongs off the machine the agent runs on",
                f"copy it to the auditor (for `gnomon log verify --seal-key`), then rm {verify}",
                severity="warning",
            )
        )
    return findings


def check_agents() -> list[Finding]:
    """Every agent configuration ``gnomon setup`` wrote still routes through Gnomon."""
    return [
        Finding("agent config", f.problem, f.fix, f.severity)
        for agent, path in recorded_setups()
        for f in agent_setup.inspect_config(agent, path)
    ]


def diagnose(url: str, *, trusted_keys: Path | None = None, cwd: Path | None = None) -> Diagnosis:
    """Run every check on the installation whose store is ``url``."""
    trusted = trusted_keys if trusted_keys is not None else trusted_keys_dir()
    store_file = sqlite_path(url)
    # a SQLite store's own key file (firewall.store.sealing); other stores: any key in the folder
    key = None if store_file is None else store_key_path(file_identity(store_file))
    findings = [
        *check_store(url),
        *check_legacy(cwd if cwd is not None else Path.cwd()),
        *check_data_dir(),
        *check_operator_keys(trusted, paths.keys_dir()),
        *check_sealing_key(key=key),
        *check_agents(),
    ]
    checked = {
        "store": url,
        "data_dir": str(paths.data_dir()),
        "trusted_keys": str(trusted),
        "sealing_key": str(key or sealing_key_dir()),
        "agent_configs": ", ".join(str(p) for _, p in recorded_setups()) or "none",
    }
    return Diagnosis(findings, checked)


__all__ = [
    "SETUP_RECORD",
    "Diagnosis",
    "Finding",
    "Severity",
    "check_agents",
    "check_data_dir",
    "check_legacy",
    "check_operator_keys",
    "check_sealing_key",
    "check_store",
    "diagnose",
    "git_worktree",
    "recorded_setups",
    "sealing_key_dir",
    "setup_record",
]
