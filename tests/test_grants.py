"""Grants: Ed25519 signatures against pinned keys; forged, edited, unpinned and expired fail."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from firewall.errors import (
    ExpiredGrantError,
    ForgedGrantError,
    KeyFileError,
    MissingGrantError,
)
from firewall.grants import (
    GrantAuthority,
    GrantSigner,
    GrantVerifier,
    load_private_key,
    load_public_key,
    write_keypair,
)

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


@pytest.fixture
def signer() -> GrantSigner:
    return GrantSigner.generate()


@pytest.fixture
def verifier(signer: GrantSigner) -> GrantVerifier:
    return GrantVerifier.pinning(signer.public_key)


def test_valid_grant_verifies(signer: GrantSigner, verifier: GrantVerifier) -> None:
    grant = signer.issue(GrantAuthority.USER, "alice", now=NOW)
    assert verifier.verify(grant, {GrantAuthority.USER}, now=NOW + timedelta(minutes=1)) == grant


@pytest.mark.parametrize(
    "edit",
    [
        {"subject": "mallory"},
        {"authority": GrantAuthority.PROBE},
        {"expires_at": NOW + timedelta(days=365)},
        {"signature": "AAAA"},
        {"signature": "not base64!"},
    ],
)
def test_edited_grant_is_forged(
    signer: GrantSigner, verifier: GrantVerifier, edit: dict[str, object]
) -> None:
    grant = signer.issue(GrantAuthority.USER, "alice", now=NOW).model_copy(update=edit)
    with pytest.raises(ForgedGrantError):
        verifier.verify(grant, {GrantAuthority.USER, GrantAuthority.PROBE}, now=NOW)


def test_unpinned_key_is_forged(verifier: GrantVerifier) -> None:
    rogue = GrantSigner.generate().issue(GrantAuthority.USER, "alice", now=NOW)
    with pytest.raises(ForgedGrantError, match="not pinned"):
        verifier.verify(rogue, {GrantAuthority.USER}, now=NOW)


def test_expired_and_not_yet_valid(signer: GrantSigner, verifier: GrantVerifier) -> None:
    grant = signer.issue(GrantAuthority.USER, "alice", now=NOW, ttl=timedelta(minutes=5))
    with pytest.raises(ExpiredGrantError):
        verifier.verify(grant, {GrantAuthority.USER}, now=NOW + timedelta(minutes=5))
    with pytest.raises(ExpiredGrantError):
        verifier.verify(grant, {GrantAuthority.USER}, now=NOW - timedelta(seconds=1))


def test_wrong_authority_and_missing(signer: GrantSigner, verifier: GrantVerifier) -> None:
    grant = signer.issue(GrantAuthority.AUDITOR, "sec", now=NOW)
    with pytest.raises(MissingGrantError, match="carries 'auditor'"):
        verifier.verify(grant, {GrantAuthority.USER}, now=NOW)
    with pytest.raises(MissingGrantError, match="none was given"):
        verifier.verify(None, {GrantAuthority.USER}, now=NOW)


def test_non_grant_object_is_forged(verifier: GrantVerifier) -> None:
    with pytest.raises(ForgedGrantError):
        verifier.verify({"authority": "user"}, {GrantAuthority.USER}, now=NOW)  # type: ignore[arg-type]


def test_key_files_round_trip(tmp_path: Path) -> None:
    private, public = write_keypair(tmp_path, "op")
    assert oct(private.stat().st_mode & 0o777) == "0o600"
    signer = GrantSigner(load_private_key(private))
    verifier = GrantVerifier.pinning(load_public_key(public))
    verifier.verify(signer.issue("user", "alice", now=NOW), {GrantAuthority.USER}, now=NOW)
    with pytest.raises(KeyFileError, match="already exists"):
        write_keypair(tmp_path, "op")


def test_bad_key_files(tmp_path: Path) -> None:
    junk = tmp_path / "junk.key"
    junk.write_text("not a key")
    with pytest.raises(KeyFileError):
        load_private_key(junk)
    with pytest.raises(KeyFileError):
        load_public_key(junk)
    with pytest.raises(KeyFileError, match="cannot read"):
        load_private_key(tmp_path / "missing.key")
