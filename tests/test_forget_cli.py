"""``gnomon forget`` and ``gnomon log verify --certificate`` (CliRunner, a real SQLite store).

The promise: forgetting ``user:alice`` on a pinned operator key erases her text from every
surface the store serves and from the store file itself, the chain and seals verify, and the
signed certificate verifies against the pinned key. Attacks: a certificate whose signed fields
were edited, and one signed by an unpinned key, are refused (the flip removes the signature
check: the edit passes); a false claim re-signed with the operator's own key is refused by the
log.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gnomon import firewall
from gnomon.firewall.audit import erasure_certificate as cert_mod
from gnomon.firewall.audit.erasure import ErasureTarget, TargetKind
from gnomon.firewall.audit.erasure_certificate import sign_certificate
from gnomon.firewall.cli import cli
from gnomon.firewall.gate.grants import GrantSigner
from gnomon.firewall.model.errors import StoreError
from gnomon.firewall.model.origin import Origin
from tests.attested import observe_as

ALICE = "Alice lives at 12 Oak Street, Springfield"
BOB = "Bob prefers green tea in the morning"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    for name in ("GNOMON_URL", "GNOMON_TRUSTED_KEYS"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def fails(result: Result, *fragments: str) -> None:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


@pytest.fixture
def store(tmp_path: Path) -> tuple[str, Path]:
    path = tmp_path / "g.db"
    url = f"sqlite:///{path}"
    with firewall.open(url) as wall, wall.session(project="shop", actor="agent") as s:
        observe_as(wall, s, Origin.user("alice"), tool="chat", content=ALICE)
        observe_as(wall, s, Origin.user("bob"), tool="chat", content=BOB)
        s.remember("Summary: " + ALICE + ", likes cats")
    return url, path


@pytest.fixture
def key(gnomon_home: Path) -> str:
    assert run("keys", "generate").exit_code == 0
    return str(gnomon_home / "keys" / "operator.key")


def _forget(url: str, key: str, *extra: str) -> dict[str, object]:
    result = run("forget", "--origin", "user:alice", "--key", key, "--url", url, "--json", *extra)
    assert result.exit_code == 0, result.output + result.stderr
    out: dict[str, object] = json.loads(result.output)
    return out


def test_forget_an_origin_then_every_check_passes(store: tuple[str, Path], key: str) -> None:
    url, path = store
    done = _forget(url, key, "--certificate", "cert.json")
    assert len(done["beliefs"]) == 1 and len(done["listed"]) == 1  # type: ignore[arg-type]
    assert b"Oak Street" not in path.read_bytes()
    verified = run("log", "verify", "--url", url)
    assert verified.exit_code == 0 and "erased: 2 event(s)" in verified.output, verified.output
    ok = run("log", "verify", "--url", url, "--certificate", "cert.json")
    assert ok.exit_code == 0, ok.output + ok.stderr
    assert "certificate of erasure" in ok.output
    assert run("rebuild", "--url", url).exit_code == 0
    # a shipped export carries an erased event as the digest the chain keeps, and verifies
    shipped = run("log", "export", "--url", url, "--sensitivity-ceiling", "public", "--out", "s")
    assert shipped.exit_code == 0, shipped.output + shipped.stderr
    assert "Oak Street" not in Path("s").read_text()
    assert run("log", "verify", "--file", "s").exit_code == 0
    beliefs = run("beliefs", "list", "--url", url, "--json")
    assert "Oak Street" not in beliefs.output and "erased on" in beliefs.output
    assert BOB in beliefs.output


def test_forget_refuses_without_a_pinned_key(store: tuple[str, Path], tmp_path: Path) -> None:
    url, _ = store
    assert run("keys", "generate", "--dir", "rogue", "--trusted-keys", "elsewhere").exit_code == 0
    rogue = str(tmp_path / "rogue" / "operator.key")
    fails(run("forget", "--origin", "user:alice", "--key", rogue, "--url", url), "pinned")
    fails(run("forget", "--key", rogue, "--url", url), "exactly one")
    fails(run("forget", "--origin", "user:alice", "--url", url), "needs --key")


def test_forget_requests_lists_what_agents_asked(store: tuple[str, Path]) -> None:
    url, _ = store
    with firewall.open(url) as wall, wall.session(project="shop", actor="agent") as s:
        belief = s.remember("Please drop the note about the parcel")
        request = s.request_forget(belief.id, "outdated")
    listed = run("forget", "--requests", "--url", url)
    assert listed.exit_code == 0 and request in listed.output and "outdated" in listed.output


def _edited(url: str, key: str) -> None:
    """ATTACK: the certificate's operator and issue date edited (what only the signature
    protects: the log does not record who held the key when the certificate was written)."""
    _forget(url, key, "--certificate", "cert.json")
    doc = json.loads(Path("cert.json").read_text())
    doc["operator"] = "the-data-protection-officer"
    doc["issued_at"] = "2026-01-01T00:00:00.000000Z"
    Path("edited.json").write_text(json.dumps(doc))


def test_attack_an_edited_certificate_is_refused(store: tuple[str, Path], key: str) -> None:
    url, _ = store
    _edited(url, key)
    fails(run("log", "verify", "--url", url, "--certificate", "edited.json"), "forged or edited")
    doc = json.loads(Path("cert.json").read_text())
    rogue = GrantSigner.generate()
    forged = sign_certificate(
        {k: v for k, v in doc.items() if k not in ("key_id", "signature")}, rogue
    )
    Path("forged.json").write_bytes(forged)
    fails(run("log", "verify", "--url", url, "--certificate", "forged.json"), "not pinned")


def test_attack_flip_without_the_signature_check_the_edit_passes(
    store: tuple[str, Path], key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = store
    _edited(url, key)
    monkeypatch.setattr(cert_mod, "_signature_holds", lambda *a: True)
    assert run("log", "verify", "--url", url, "--certificate", "edited.json").exit_code == 0


def test_attack_a_resigned_false_certificate_is_caught_by_the_log(
    store: tuple[str, Path], key: str
) -> None:
    """With the signature good (the operator's own key re-signs a false claim), the log
    itself refuses it: a certificate cannot hide a rewritten event or claim another belief."""
    url, _ = store
    _forget(url, key, "--certificate", "cert.json")
    doc = json.loads(Path("cert.json").read_text())
    doc["events"] = doc["events"][:-1]  # hides one rewritten event
    fields = {k: v for k, v in doc.items() if k not in ("key_id", "signature")}
    Path("resigned.json").write_bytes(sign_certificate(fields, GrantSigner.from_file(key)))
    fails(
        run("log", "verify", "--url", url, "--certificate", "resigned.json"),
        "lists other events",
    )
    doc = json.loads(Path("cert.json").read_text())
    doc["beliefs"] = [*doc["beliefs"], "bel_never_erased"]
    fields = {k: v for k, v in doc.items() if k not in ("key_id", "signature")}
    Path("more.json").write_bytes(sign_certificate(fields, GrantSigner.from_file(key)))
    fails(run("log", "verify", "--url", url, "--certificate", "more.json"), "set of beliefs")


def test_an_ndjson_file_store_refuses_to_erase_rather_than_leave_the_file(tmp_path: Path) -> None:
    """The append-only NDJSON log cannot be rewritten in place: forget is refused, typed, and
    the file keeps verifying (nothing half-erased)."""
    url = f"memory://{tmp_path / 'log.ndjson'}"
    with firewall.open(url) as wall:
        with wall.session(project="shop", actor="agent") as s:
            s.remember("Alice lives at 12 Oak Street")
        with pytest.raises(StoreError, match="cannot erase"):
            wall.forget(
                ErasureTarget(TargetKind.PROJECT, "shop"),
                grant=wall.grant("eraser", "ops", project="shop"),
            )
        assert wall.verify_log().ok
