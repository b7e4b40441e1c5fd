"""Cross-process attacks on the kernel: holds survive a restart, approvals travel through the
store (``gnomon approve``), forgeries on that channel never execute, and two host processes
racing for one approved push run it exactly once (SQLite and PostgreSQL), all with real
subprocesses, real git and real stores."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from gnomon import firewall
from gnomon.firewall.gate.grants import KeyPurpose, write_keypair
from gnomon.firewall.kernel import PolicySigner
from gnomon.firewall.kernel.actionpolicy import preset_bytes
from gnomon.probes._kernel import make_repo

REPO = Path(__file__).resolve().parent.parent
HOST = str(REPO / "tests" / "kernel_host.py")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def _host(url: str, folder: Path, command: str) -> str:
    done = subprocess.run(
        [sys.executable, HOST, url, str(folder), command],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _gnomon(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from firewall.cli import main; main()", *args],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
        check=False,
    )


def _setup(folder: Path) -> None:
    (folder / "actions.yaml").write_bytes(preset_bytes("default"))
    key, _ = write_keypair(folder, "operator", purpose=KeyPurpose.POLICY)
    write_keypair(folder, "approver", purpose=KeyPurpose.APPROVAL)
    write_keypair(folder, "mallory", purpose=KeyPurpose.APPROVAL)  # not pinned by the host
    signed = _gnomon("policy", "sign", str(folder / "actions.yaml"), "--key", str(key))
    assert signed.returncode == 0, signed.stderr
    make_repo(folder)


def _story(url: str, folder: Path) -> None:
    _setup(folder)
    request_id, status = _host(url, folder, "propose").split()
    assert status == "held"
    # a new process (the host restarted): the hold is rebuilt from the log
    assert _host(url, folder, "holds").split() == [request_id]
    listed = _gnomon("holds", "--url", url)
    assert request_id in listed.stdout, listed.stderr
    # the approver reads what will run and where each value came from: the branch is the
    # README's, not the user's
    assert "remote = origin" in listed.stdout
    branch = next(line for line in listed.stdout.splitlines() if "branch = main" in line)
    assert "untrusted (obs_" in branch and "external:file:README.md" in branch
    # an approval signed by a key the host never pinned, through the out-of-process channel
    forged = _gnomon(
        "approve",
        request_id,
        "--key",
        str(folder / "mallory.key"),
        "--approver",
        "mallory",
        "--url",
        url,
    )
    assert forged.returncode == 0, forged.stderr
    assert "ForgedApprovalError wrong_key" in _host(url, folder, "process")
    assert not (folder / "pushed").exists()
    # the real approver; two host processes race to act on it
    ok = _gnomon(
        "approve",
        request_id,
        "--key",
        str(folder / "approver.key"),
        "--approver",
        "alice",
        "--url",
        url,
    )
    assert ok.returncode == 0, ok.stderr
    assert "approve: git_push [L4]" in ok.stdout and "branch = main" in ok.stdout
    racers = [
        subprocess.Popen(
            [sys.executable, HOST, url, str(folder), "process"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        for _ in range(3)
    ]
    for racer in racers:
        _, err = racer.communicate(timeout=120)
        assert racer.returncode == 0, err
    assert (folder / "pushed").read_text() == "main\n"  # exactly once
    with firewall.open(url) as wall:
        kinds = [e.kind for e in wall.store.events()]
    assert kinds.count("action.executing") == 1
    assert kinds.count("action.executed") == 1
    assert kinds.count("approval.forgery") == 1
    why = _gnomon("why", request_id, "--url", url)
    assert "external:file:README.md" in why.stdout and "executed" in why.stdout, why.stderr


def test_cross_process_holds_approvals_and_exactly_once_on_sqlite(tmp_path: Path) -> None:
    _story(f"sqlite:///{tmp_path / 'gnomon.db'}", tmp_path)


@pytest.mark.postgres
def test_cross_process_holds_approvals_and_exactly_once_on_postgres(
    tmp_path: Path, postgres_url: str
) -> None:
    firewall.open(postgres_url).close()  # create the schema once, before the racers
    sep = "&" if "?" in postgres_url else "?"
    _story(f"{postgres_url}{sep}tenant=kernel_{secrets.token_hex(4)}", tmp_path)


def test_policy_sign_and_verify_commands(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_bytes(preset_bytes("default"))
    key, pub = write_keypair(tmp_path, "operator", purpose=KeyPurpose.POLICY)
    assert _gnomon("policy", "sign", str(tmp_path / "a.yaml"), "--key", str(key)).returncode == 0
    assert _gnomon("policy", "verify", str(tmp_path / "a.yaml"), "--pub", str(pub)).returncode == 0
    (tmp_path / "a.yaml").write_bytes(preset_bytes("default").replace(b"PT15M", b"PT15H"))
    bad = _gnomon("policy", "verify", str(tmp_path / "a.yaml"), "--pub", str(pub))
    assert bad.returncode == 1 and "does not verify" in bad.stderr
    assert PolicySigner  # the CLI signs with the same class the library exposes
