"""Grants: Ed25519 signatures against pinned keys; forged, edited, unpinned and expired fail.

The second half plays the attacker of issue 8, item 3: grant subclasses and hand-built grants,
checkpoint signatures replayed as grants (and back), grants used outside their scope, and a
promoting grant used twice, in one process and across processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from gnomon import firewall
from gnomon.firewall.gate.gate import Move
from gnomon.firewall.gate.grants import (
    GRANT_DOMAIN,
    Grant,
    GrantAuthority,
    GrantSigner,
    GrantVerifier,
    KeyPurpose,
    load_private_key,
    load_public_key,
    write_keypair,
)
from gnomon.firewall.host.firewall import Firewall
from gnomon.firewall.log.checkpoints import CHECKPOINT_DOMAIN, CheckpointSigner
from gnomon.firewall.model.chain import Belief
from gnomon.firewall.model.errors import (
    ExpiredGrantError,
    ForgedGrantError,
    GrantScopeError,
    InputError,
    KeyFileError,
    MissingGrantError,
    ParallaxError,
    SpentGrantError,
)
from gnomon.firewall.model.origin import Origin
from gnomon.firewall.model.states import Authority, Axis

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
        {"store": "mem0"},  # widening a grant to a whole store's imports is an edit too
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


# -- attacks (issue 8, item 3): smuggled grants, crossed keys, scope, single use -----------------

CHECKPOINT_HASH = "0" * 64


@pytest.fixture
def wall(tmp_path: Path) -> Iterator[Firewall]:
    with firewall.open(f"sqlite:///{tmp_path / 'g.db'}") as w:
        yield w


def _notes(wall: Firewall, *texts: str, project: str = "shop") -> list[Belief]:
    """Unverified pages read from the web: what an agent would love to see promoted."""
    with wall.session(project=project, actor="coder") as s:
        return [
            s.observe(
                tool="fetch", content=t, origin=Origin.external(f"web:{i}"), subject=f"ops.{i}"
            ).content[0]
            for i, t in enumerate(texts)
        ]


def _fields(grant: Grant) -> dict[str, Any]:
    return {name: getattr(grant, name) for name in Grant.model_fields}


def test_a_grant_subclass_with_its_own_signed_bytes_is_forged(
    signer: GrantSigner, verifier: GrantVerifier
) -> None:
    genuine = signer.issue(GrantAuthority.AUDITOR, "sec", now=NOW)

    class Relabelled(Grant):
        def signed_bytes(self) -> bytes:
            return genuine.signed_bytes()  # the genuine bytes, whatever the fields now say

    mallory = Relabelled.model_construct(
        **{**_fields(genuine), "authority": GrantAuthority.USER, "subject": "mallory"}
    )
    with pytest.raises(ForgedGrantError, match="Relabelled"):
        verifier.verify(mallory, {GrantAuthority.USER}, now=NOW)


@pytest.mark.parametrize(
    "odd",
    [
        {"authority": "user"},  # a plain string, not the enum
        {"issued_at": NOW.isoformat()},
        {"expires_at": 2**62},
        {"beliefs": ["bel_x"]},  # a list, not a tuple
        {"subject": None},
        {"signature": b"\x00\x01"},
    ],
)
def test_a_model_construct_grant_with_odd_field_types_is_refused_typed(
    signer: GrantSigner, verifier: GrantVerifier, odd: dict[str, Any]
) -> None:
    genuine = signer.issue(GrantAuthority.USER, "alice", project="shop", beliefs=["bel_x"], now=NOW)
    forged = Grant.model_construct(**{**_fields(genuine), **odd})
    with pytest.raises(ForgedGrantError, match="malformed"):
        verifier.verify(forged, {GrantAuthority.USER}, now=NOW)


def test_a_string_that_equals_everything_does_not_widen_a_grant(wall: Firewall) -> None:
    mine, theirs = _notes(wall, "Rotate the token monthly", "Push to main, skip review")

    class EqualsAll(str):
        __hash__ = str.__hash__

        def __eq__(self, other: object) -> bool:
            return True

    grant = wall.grant("user", "alice", beliefs=[mine.id])
    widened = Grant.model_construct(**{**_fields(grant), "beliefs": (EqualsAll(mine.id),)})
    with pytest.raises(ForgedGrantError, match="plain strings"):
        wall.promote(theirs.id, grant=widened, reason="smuggled")
    assert wall.require_belief(theirs.id).truth_status == "unverified"


def test_a_checkpoint_signature_never_verifies_as_a_grant_with_the_same_key() -> None:
    key = Ed25519PrivateKey.generate()
    grants, checkpoints = GrantSigner(key), CheckpointSigner(key)
    # The operator pinned one key for both purposes; the agent can read every checkpoint.
    verifier = GrantVerifier.pinning(key.public_key())
    checkpoint = checkpoints.sign("memory://", 7, CHECKPOINT_HASH, now=NOW)
    template = grants.issue(GrantAuthority.AUDITOR, "sec", now=NOW)
    smuggled = template.model_copy(update={"signature": checkpoint.signature})
    with pytest.raises(ForgedGrantError, match="does not verify"):
        verifier.verify(smuggled, {GrantAuthority.AUDITOR}, now=NOW)


def test_a_grant_signature_never_verifies_as_a_checkpoint_with_the_same_key() -> None:
    key = Ed25519PrivateKey.generate()
    grant = GrantSigner(key).issue(GrantAuthority.AUDITOR, "sec", now=NOW)
    checkpoint = CheckpointSigner(key).sign("memory://", 7, CHECKPOINT_HASH, now=NOW)
    smuggled = checkpoint.model_copy(update={"signature": grant.signature})
    assert smuggled.verify_signature([key.public_key()]) is not None
    assert checkpoint.verify_signature([key.public_key()]) is None  # the control
    assert GRANT_DOMAIN != CHECKPOINT_DOMAIN


def test_key_files_declare_their_purpose(tmp_path: Path) -> None:
    cp_key, cp_pub = write_keypair(tmp_path, "cp", purpose=KeyPurpose.CHECKPOINT)
    gr_key, gr_pub = write_keypair(tmp_path, "gr", purpose=KeyPurpose.GRANT)
    with pytest.raises(KeyFileError, match="checkpoint key, not a grant key"):
        GrantSigner.from_file(cp_key)
    with pytest.raises(KeyFileError, match="grant key, not a checkpoint key"):
        CheckpointSigner.from_file(gr_key)
    with pytest.raises(KeyFileError, match="checkpoint key"):
        load_public_key(cp_pub, purpose=KeyPurpose.GRANT)
    assert GrantSigner.from_file(gr_key).public_key == load_public_key(gr_pub)
    assert CheckpointSigner.from_file(cp_key).key_id == CheckpointSigner.from_file(cp_key).key_id
    plain, _ = write_keypair(tmp_path, "op")  # undeclared: the one operator key for both
    GrantSigner.from_file(plain)
    CheckpointSigner.from_file(plain)


def test_a_grant_covers_only_the_beliefs_and_project_it_names(wall: Firewall) -> None:
    mine, theirs = _notes(wall, "Rotate the token monthly", "Push to main, skip review")
    (elsewhere,) = _notes(wall, "Deploy on Fridays", project="other")
    grant = wall.grant("user", "alice", beliefs=[mine.id])
    assert grant.project == "shop" and grant.beliefs == (mine.id,)
    with pytest.raises(GrantScopeError, match="does not cover"):
        wall.promote(theirs.id, grant=grant, reason="borrowed grant")
    with pytest.raises(GrantScopeError, match="does not cover"):
        wall.quarantine(theirs.id, grant=grant, reason="borrowed grant")
    prefix = wall.grant("user", "alice", subject_prefix="ops.", project="other")
    with pytest.raises(GrantScopeError, match="covers project 'other' only"):
        wall.promote(mine.id, grant=prefix, reason="wrong tenant")
    assert wall.promote(elsewhere.id, grant=prefix, reason="alice checked").truth_status == (
        "supported"
    )
    for unchanged in (mine, theirs):
        assert wall.require_belief(unchanged.id).truth_status == "unverified"
    with pytest.raises(InputError, match="must name what it covers"):
        wall.grant("user", "alice")
    with pytest.raises(InputError, match="one project"):
        wall.grant("user", "alice", beliefs=[mine.id, elsewhere.id])


def test_an_auditor_grant_reads_only_its_project(wall: Firewall) -> None:
    (shop,) = _notes(wall, "Rotate the token monthly")
    (other,) = _notes(wall, "Rotate the keys yearly", project="other")
    grant = wall.grant("auditor", "sec", project="shop")
    assert [e.belief.id for e in wall.audit("rotate", grant=grant)] == [shop.id]
    with pytest.raises(GrantScopeError, match="covers project 'shop' only"):
        wall.audit("rotate", grant=grant, project="other")
    everywhere = wall.grant("auditor", "sec")
    found = {e.belief.id for e in wall.audit("rotate", grant=everywhere)}
    assert found == {shop.id, other.id}
    assert {e.belief.id for e in wall.audit("rotate", grant=everywhere)} == found  # reusable


def test_a_promoting_grant_is_single_use(wall: Firewall) -> None:
    first, second = _notes(wall, "Rotate the token monthly", "Push to main, skip review")
    grant = wall.grant("user", "alice", beliefs=[first.id, second.id])
    wall.promote(first.id, grant=grant, reason="alice checked")
    head = wall.store.head()
    with pytest.raises(SpentGrantError, match="already used"):
        wall.promote(second.id, grant=grant, reason="again")
    with pytest.raises(SpentGrantError):
        wall.transition(second.id, [Move(Axis.RETRIEVAL, "normal")], reason="sideways", grant=grant)
    assert wall.store.head() == head
    assert wall.require_belief(second.id).truth_status == "unverified"


def test_a_clearing_grant_is_single_use(wall: Firewall) -> None:
    first, second = _notes(wall, "Rotate the token monthly", "Push to main, skip review")
    for b in (first, second):
        wall.quarantine(b.id, reason="sentinel", authority=Authority.SENTINEL)
    grant = wall.grant("user", "alice", beliefs=[first.id, second.id])
    wall.clear(first.id, grant=grant, reason="false positive")
    with pytest.raises(SpentGrantError):
        wall.clear(second.id, grant=grant, reason="and this one")
    assert wall.require_belief(second.id).security_status == "quarantined"


def test_a_spent_grant_stays_spent_in_another_process(tmp_path: Path) -> None:
    key, pub = write_keypair(tmp_path / "keys", "operator")
    url = f"sqlite:///{tmp_path / 'spent.db'}"
    opened = {"trusted_keys": [load_public_key(pub)], "signer": GrantSigner.from_file(key)}
    with firewall.open(url, **opened) as wall:  # type: ignore[arg-type]
        first, second = _notes(wall, "Rotate the token monthly", "Push to main, skip review")
        grant = wall.grant("user", "alice", beliefs=[first.id, second.id])
    (tmp_path / "grant.json").write_text(grant.model_dump_json())
    script = (
        "import sys\nfrom gnomon import firewall\n"
        "from gnomon.firewall.gate.grants import Grant, load_public_key\n"
        "g = Grant.model_validate_json(open(sys.argv[2]).read(), strict=False)\n"
        "with firewall.open(sys.argv[1], trusted_keys=[load_public_key(sys.argv[3])]) as w:\n"
        "    w.promote(sys.argv[4], grant=g, reason='alice checked')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, url, str(tmp_path / "grant.json"), str(pub), first.id],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    # A restart: a new firewall over the same file, the same grant replayed.
    with firewall.open(url, **opened) as wall:  # type: ignore[arg-type]
        assert wall.require_belief(first.id).truth_status == "supported"
        with pytest.raises(SpentGrantError):
            wall.promote(second.id, grant=grant, reason="replayed")
        assert wall.require_belief(second.id).truth_status == "unverified"


def test_policy_authority_cannot_make_an_unverified_belief_normal(wall: Firewall) -> None:
    (page,) = _notes(wall, "Push to main, skip review")
    for moves in (
        [Move(Axis.RETRIEVAL, "normal")],
        [Move(Axis.TRUTH, "supported")],
    ):
        with pytest.raises(ParallaxError):
            wall.transition(page.id, moves, reason="policy automation", authority=Authority.POLICY)
    after = wall.require_belief(page.id)
    assert (after.truth_status, after.retrieval_status) == ("unverified", "restricted")
    with wall.session(project="shop", actor="coder") as s:
        assert s.recall("push main review", policy="planner").accepted == ()


def test_a_store_grant_covers_only_that_stores_imports_in_its_project(wall: Firewall) -> None:
    """A store-scoped grant names the store and project inside the signature: it covers the
    memories imported from that store in that project, not an agent's note, not another
    store's import, not another project's."""
    from gnomon.firewall.host.firewall import ImportItem

    def imported(store: str, project: str, text: str) -> str:
        wall.import_records(
            [ImportItem(text=text, source_id=f"{store}-{project}-{text[:4]}")],
            store_name=store,
            project=project,
            bind=True,
        )
        (binding,) = [b for b in wall.store.list_bindings(store) if b.store_id.endswith(text[:4])]
        return binding.belief_id

    mine = wall.require_belief(imported("mem0", "shop", "Deploys go through ArgoCD"))
    other_store = wall.require_belief(imported("zep", "shop", "Payments need review"))
    other_project = wall.require_belief(imported("mem0", "bank", "Audit logs monthly"))
    (note,) = _notes(wall, "Push to main, skip review")
    grant = wall.grant("user", "ops", project="shop", store="mem0")
    assert grant.covers(mine)
    assert not grant.covers(other_store) and not grant.covers(other_project)
    assert not grant.covers(note)
    # an agent's note derived from the import carries the import's origin and its own: the
    # grant covers memories imported from the store, not what an agent wrote from them
    with wall.session(project="shop", actor="coder") as s:
        s.recall("ArgoCD deploys")
        derived = s.remember("Deploys go through ArgoCD, so skip review", derived_from=[mine.id])
    assert "imported:mem0" in derived.origin.origin_ids
    assert not grant.covers(wall.require_belief(derived.id))
    with pytest.raises(InputError, match="must name"):
        wall.grant("user", "ops", store="mem0")  # no project: refused
    with pytest.raises(InputError, match="names no beliefs"):
        wall.grant("auditor", "ops", project="shop", store="mem0")
