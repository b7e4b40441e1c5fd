"""Grants at their boundaries: both sides of every time and scope comparison in the verifier.

Written as attacks by an agent that holds a genuine grant and tries to stretch it: one tick past
its expiry, one tick before it was issued, a project-scoped grant for an operation that spans
every project, a subject prefix or store coverage stretched to beliefs it does not name. Each
boundary is pinned on both sides, so a mutant that moves a comparison by one (``<`` for ``<=``)
or drops one conjunct of a scope check fails here (bench/mutation.py, issue 28). The FLIP of each
attack is its other side in the same test: the same grant, one tick inside, is accepted.
"""

from __future__ import annotations

import stat
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gnomon import firewall
from gnomon.firewall.gate.grants import (
    GRANT_DOMAIN,
    Grant,
    GrantAuthority,
    GrantSigner,
    GrantVerifier,
    KeyPurpose,
    key_purpose,
    write_keypair,
)
from gnomon.firewall.host.firewall import Firewall
from gnomon.firewall.model.chain import Belief
from gnomon.firewall.model.errors import (
    ExpiredGrantError,
    ForgedGrantError,
    GrantScopeError,
    InputError,
    KeyFileError,
    MissingGrantError,
)
from gnomon.firewall.model.origin import Origin

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
TTL = timedelta(minutes=5)
TICK = timedelta(microseconds=1)
SIGNER = GrantSigner.generate()
VERIFIER = GrantVerifier.pinning(SIGNER.public_key)
USER = {GrantAuthority.USER}


@pytest.fixture
def wall(tmp_path: Path) -> Iterator[Firewall]:
    with firewall.open(f"sqlite:///{tmp_path / 'b.db'}") as w:
        yield w


def _note(
    wall: Firewall, subject: str, project: str = "shop", origin: Origin | None = None
) -> Belief:
    with wall.session(project=project, actor="coder") as s:
        return s.observe(
            tool="fetch",
            content=f"a page about {subject}",
            origin=origin or Origin.external(f"web:{subject}"),
            subject=subject,
        ).content[0]


@given(offset=st.integers(min_value=-(10**9), max_value=10**9))
def test_a_grant_is_valid_from_its_issue_to_one_tick_before_its_expiry(offset: int) -> None:
    grant = SIGNER.issue(GrantAuthority.USER, "alice", beliefs=["bel_1"], now=NOW, ttl=TTL)
    moment = NOW + timedelta(microseconds=offset)
    if NOW <= moment < NOW + TTL:
        assert VERIFIER.verify(grant, USER, now=moment).id == grant.id
    else:
        with pytest.raises(ExpiredGrantError):
            VERIFIER.verify(grant, USER, now=moment)


@pytest.mark.parametrize(
    ("moment", "valid"),
    [
        (NOW - TICK, False),  # one tick before issue: not yet valid
        (NOW, True),  # at the instant of issue
        (NOW + TTL - TICK, True),  # one tick before expiry
        (NOW + TTL, False),  # at expires_at: expired
        (NOW + TTL + TICK, False),
    ],
)
def test_grant_expiry_at_each_instant(moment: datetime, valid: bool) -> None:
    grant = SIGNER.issue(GrantAuthority.USER, "alice", beliefs=["bel_1"], now=NOW, ttl=TTL)
    if valid:
        VERIFIER.verify(grant, USER, now=moment)
    else:
        with pytest.raises(ExpiredGrantError, match="is valid from"):
            VERIFIER.verify(grant, USER, now=moment)


def test_a_project_scoped_grant_does_not_reach_an_every_project_operation() -> None:
    grant = SIGNER.issue(GrantAuthority.AUDITOR, "sec", project="shop", now=NOW)
    auditor = {GrantAuthority.AUDITOR}
    with pytest.raises(GrantScopeError, match=r"^audit: grant .* not every project"):
        VERIFIER.verify(grant, auditor, now=NOW, project=None, operation="audit")
    with pytest.raises(GrantScopeError, match="not project 'other'"):
        VERIFIER.verify(grant, auditor, now=NOW, project="other", operation="audit")
    # FLIP: the same grant inside its project, and an every-project grant everywhere
    VERIFIER.verify(grant, auditor, now=NOW, project="shop", operation="audit")
    everywhere = SIGNER.issue(GrantAuthority.AUDITOR, "sec", now=NOW)
    VERIFIER.verify(everywhere, auditor, now=NOW, project=None, operation="audit")
    VERIFIER.verify(everywhere, auditor, now=NOW, project="other", operation="audit")


def test_a_subject_prefix_covers_its_subjects_only(wall: Firewall) -> None:
    inside, outside = _note(wall, "ops.deploy"), _note(wall, "opsdeploy")
    grant = SIGNER.issue(
        GrantAuthority.USER, "alice", project="shop", subject_prefix="ops.", now=NOW
    )
    assert grant.covers(inside) and not grant.covers(outside)
    with pytest.raises(GrantScopeError, match="does not cover"):
        VERIFIER.verify(grant, USER, now=NOW, belief=outside)
    VERIFIER.verify(grant, USER, now=NOW, belief=inside)  # FLIP


def test_a_missing_or_wrong_grant_names_what_the_operation_needs() -> None:
    with pytest.raises(MissingGrantError, match=r"^this operation needs a user grant and none"):
        VERIFIER.verify(None, USER, now=NOW)
    auditor = SIGNER.issue(GrantAuthority.AUDITOR, "sec", now=NOW)
    with pytest.raises(MissingGrantError, match=r"^promote needs a probe or user grant; grant"):
        VERIFIER.verify(auditor, {GrantAuthority.USER, GrantAuthority.PROBE}, operation="promote")


def test_a_belief_id_grant_covers_that_belief_only(wall: Firewall) -> None:
    mine, theirs = _note(wall, "a"), _note(wall, "b")
    grant = SIGNER.issue(GrantAuthority.USER, "alice", project="shop", beliefs=[mine.id], now=NOW)
    assert grant.covers(mine) and not grant.covers(theirs)
    with pytest.raises(GrantScopeError, match="does not cover"):
        VERIFIER.verify(grant, USER, now=NOW, belief=theirs)


def test_a_store_grant_covers_exactly_that_stores_imports_in_its_project(wall: Firewall) -> None:
    page = _note(wall, "m")

    def imported(store: str, project: str = "shop") -> Belief:
        return page.model_copy(update={"origin": Origin.imported(store), "project": project})

    mine = imported("mem0")
    assert mine.origin.origin_ids == frozenset({"imported:mem0"})
    grant = SIGNER.issue(GrantAuthority.USER, "alice", project="shop", store="mem0", now=NOW)
    assert grant.covers(mine)
    for outside in (imported("zep"), imported("mem0", project="other"), page):
        assert not grant.covers(outside), (outside.project, outside.origin.origin_ids)
    # a store grant without a project covers nothing of the store (issue refuses to make one;
    # a grant object is frozen and signed, so only the cover rule itself is left to pin)
    unscoped = grant.model_copy(update={"project": None})
    assert not unscoped.covers(mine.model_copy(update={"project": None}))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("beliefs", ("bel_1", "bel_victim")),
        ("issued_at", NOW - timedelta(days=1)),
        ("expires_at", NOW + timedelta(days=1)),
        ("project", "other"),
        ("subject_prefix", ""),
        ("store", "mem0"),
        ("subject", "root"),
    ],
)
def test_every_field_of_a_grant_is_covered_by_its_signature(field: str, value: object) -> None:
    """The agent holds a genuine grant and widens one field (more beliefs, an earlier start,
    a later expiry, ...): the edited grant must not verify."""
    grant = SIGNER.issue(GrantAuthority.USER, "alice", beliefs=["bel_1"], now=NOW, ttl=TTL)
    VERIFIER.verify(grant, USER, now=NOW)  # FLIP: as issued
    edited = grant.model_copy(update={field: value})
    with pytest.raises(ForgedGrantError, match="does not verify"):
        VERIFIER.verify(edited, USER, now=NOW)


@pytest.mark.parametrize("junk", ["!", " ", "\n", "*"])
def test_a_signature_with_junk_characters_is_not_the_same_signature(junk: str) -> None:
    """A lenient base64 decoder would drop the junk and verify: one grant, many spellings of its
    signature, each a fresh identity to anything that remembers grants by their text."""
    grant = SIGNER.issue(GrantAuthority.USER, "alice", beliefs=["bel_1"], now=NOW)
    spelled = grant.model_copy(
        update={"signature": grant.signature[:10] + junk + grant.signature[10:]}
    )
    with pytest.raises(ForgedGrantError, match="does not verify"):
        VERIFIER.verify(spelled, USER, now=NOW)


def test_a_key_file_with_a_non_ascii_purpose_is_refused_typed(tmp_path: Path) -> None:
    key, _ = write_keypair(tmp_path, "k", purpose=KeyPurpose.GRANT)
    forged = tmp_path / "forged.key"
    forged.write_bytes(key.read_bytes().replace(b"grant", "gr\u00e4nt".encode(), 1))
    assert key_purpose(forged.read_bytes()) == "gr\ufffd\ufffdnt"
    with pytest.raises(KeyFileError, match="not a grant key"):
        GrantSigner.from_file(forged)
    GrantSigner.from_file(key)  # FLIP: the file as written


def test_key_files_are_written_owner_only_in_new_folders(tmp_path: Path) -> None:
    folder = tmp_path / "a" / "b"
    private, public = write_keypair(folder)  # the default name, parents created
    assert (private.name, public.name) == ("operator.key", "operator.pub")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert private.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")  # no purpose line
    assert public.read_bytes().startswith(b"-----BEGIN PUBLIC KEY-----")
    assert key_purpose(private.read_bytes()) is None


def test_the_signed_bytes_of_a_grant_are_a_fixed_format() -> None:
    """Grants outlive one process (``gnomon grant`` writes them, another version verifies): the
    bytes a signature covers are pinned, so a change of sorting, field form or time format is a
    visible break, not a silent one that only the signer and verifier of one build agree on."""
    grant = Grant.model_validate(
        {
            "id": "grt_1",
            "authority": GrantAuthority.USER,
            "subject": "alice",
            "project": "shop",
            "beliefs": ("bel_2", "bel_1"),
            "subject_prefix": None,
            "store": None,
            "issued_at": NOW,
            "expires_at": NOW + TTL,
            "key_id": "0123456789abcdef",
            "signature": "",
        }
    )
    assert grant.signed_bytes() == GRANT_DOMAIN + (
        b'{"authority":"user","beliefs":["bel_2","bel_1"],"expires_at":"2026-11-22T12:05:00.000000Z",'
        b'"id":"grt_1","issued_at":"2026-11-22T12:00:00.000000Z","key_id":"0123456789abcdef",'
        b'"project":"shop","store":null,"subject":"alice","subject_prefix":null}'
    )
    key_id = GrantSigner.generate().key_id  # the id pinned keys are looked up by
    assert len(key_id) == 16 and int(key_id, 16) >= 0


@pytest.mark.parametrize(
    ("scope", "problem"),
    [
        ({"subject_prefix": ""}, "must not be empty"),
        ({"store": "mem0"}, "must name the store and its project"),
        ({"store": "  ", "project": "shop"}, "must name the store and its project"),
    ],
)
def test_a_signer_refuses_a_grant_that_would_cover_everything(
    scope: dict[str, str], problem: str
) -> None:
    with pytest.raises(InputError, match=problem):
        SIGNER.issue(GrantAuthority.USER, "alice", now=NOW, **scope)  # type: ignore[arg-type]
    SIGNER.issue(GrantAuthority.USER, "alice", now=NOW, project="shop", store="mem0")  # FLIP
    SIGNER.issue(GrantAuthority.USER, "alice", now=NOW, subject_prefix="ops.")
