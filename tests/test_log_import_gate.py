"""Attacks on ``gnomon log import``: a perfectly hash-chained log whose events carry belief
states the gate refuses is refused whole, naming the seq and the rule; with ``--key`` a log whose
tail runs past the last signed checkpoint is refused. Each log here is written straight into a
store's commit (a tool that bypassed the gate, or an export edited and re-chained), so the chain
itself verifies."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gnomon import firewall
from gnomon.firewall.audit.import_check import (
    IllegalTransitionError,
    UnverifiedAuthorityError,
    check_transitions,
)
from gnomon.firewall.cli import cli
from gnomon.firewall.gate.grants import write_keypair
from gnomon.firewall.log.checkpoints import CheckpointSigner, write_checkpoint
from gnomon.firewall.log.ndjson import export_to_file
from gnomon.firewall.model.chain import Belief
from gnomon.firewall.model.errors import LogIntegrityError
from gnomon.firewall.model.origin import Origin
from gnomon.firewall.model.states import (
    Authority,
    Axis,
    EvidenceQuality,
    RetrievalStatus,
    SecurityStatus,
    TruthStatus,
)
from gnomon.firewall.store.memory import MemoryStore
from gnomon.firewall.store.sqlite import SQLiteStore
from tests.factories import (
    at,
    belief_draft,
    make_belief,
    make_draft,
    make_evidence,
    make_records,
    make_revision,
)

EXTERNAL = Origin.external("https://evil.example/page")


def _adopted(
    origin: Origin = EXTERNAL,
    quality: EvidenceQuality = EvidenceQuality.EXTERNAL_DOCUMENT,
    **overrides: object,
) -> tuple[Belief, object]:
    """A belief as the gate adopts it, with its evidence, in one draft: by default an external
    page's (unverified, restricted, reading-class evidence)."""
    fields: dict[str, object] = {
        "truth_status": TruthStatus.UNVERIFIED,
        "retrieval_status": RetrievalStatus.RESTRICTED,
        **overrides,
    }
    belief = make_belief(origin=origin, authority=Authority.AUTO_OBSERVATION, **fields)
    evidence = make_evidence(claim_id=belief.claim_id, quality=quality, origin=origin)
    return belief, make_draft(make_records(evidence=[evidence], beliefs=[belief]))


def _moved(belief: Belief, hours: float, **states: object) -> Belief:
    return belief.model_copy(
        update={**states, "version": belief.version + 1, "updated_at": at(hours=hours)}
    )


def _revised(belief: Belief, *revisions: object) -> object:
    return make_draft(make_records(beliefs=[belief], revisions=list(revisions)), kind="belief.x")


def _import(tmp_path: Path, source: MemoryStore, *extra: str) -> tuple[Result, SQLiteStore]:
    assert source.verify().ok  # the chain is perfect: only the gate can tell
    export_to_file(source.chain_rows(), tmp_path / "log.ndjson")
    url = f"sqlite:///{tmp_path / 'target.db'}"
    result = CliRunner().invoke(
        cli, ["log", "import", str(tmp_path / "log.ndjson"), "--url", url, *extra]
    )
    return result, SQLiteStore(tmp_path / "target.db")


def _refused(tmp_path: Path, source: MemoryStore, seq: int, rule: str) -> None:
    result, target = _import(tmp_path, source)
    assert result.exit_code != 0, result.output
    assert isinstance(result.exception, SystemExit) or result.exception is None
    assert f"seq {seq}" in result.output and rule in result.output, result.output
    assert "Traceback" not in result.output
    assert target.head()[0] == 0  # all or nothing
    target.close()
    with pytest.raises(IllegalTransitionError) as caught:
        check_transitions(MemoryStore(), list(source.events()), verified=True)
    assert caught.value.seq == seq and rule in caught.value.rule


def test_external_belief_adopted_supported_is_refused(tmp_path: Path) -> None:
    source = MemoryStore()
    belief, _ = _adopted()
    poisoned = belief.model_copy(
        update={"truth_status": TruthStatus.SUPPORTED, "retrieval_status": RetrievalStatus.NORMAL}
    )
    evidence = make_evidence(
        claim_id=belief.claim_id, quality=EvidenceQuality.EXTERNAL_DOCUMENT, origin=EXTERNAL
    )
    source.commit(
        [
            make_draft(kind="test.note"),
            make_draft(make_records(evidence=[evidence], beliefs=[poisoned])),
        ]
    )
    _refused(tmp_path, source, 2, "unexplained-move")


@pytest.mark.parametrize(
    ("authority", "grant_id", "reason"),
    [
        # A policy promotion with no evidence behind it.
        (Authority.POLICY, None, "ParallaxError"),
        # A user revision that names no grant.
        (Authority.USER, None, "grant-required"),
        # A user revision whose "grant" is some other record's id.
        (Authority.USER, "bel_01J0000000000000000000000", "grant-required"),
    ],
)
def test_unsupported_promotion_is_refused(
    tmp_path: Path, authority: Authority, grant_id: str | None, reason: str
) -> None:
    source = MemoryStore()
    belief, adopted = _adopted()
    promoted = _moved(belief, 1, truth_status=TruthStatus.SUPPORTED)
    source.commit([adopted])  # type: ignore[list-item]
    source.commit(
        [
            _revised(  # type: ignore[list-item]
                promoted,
                make_revision(
                    belief_id=belief.id,
                    authority=authority,
                    grant_id=grant_id,
                    created_at=at(hours=1),
                ),
            )
        ]
    )
    _refused(tmp_path, source, 2, reason)


def test_quarantine_cleared_without_user_authority_is_refused(tmp_path: Path) -> None:
    source = MemoryStore()
    belief, adopted = _adopted()
    quarantined = _moved(
        belief,
        1,
        security_status=SecurityStatus.QUARANTINED,
        retrieval_status=RetrievalStatus.PRIVILEGED_ONLY,
    )
    when = at(hours=1)
    sentinel = {"authority": Authority.SENTINEL, "reason": "injection", "created_at": when}
    cleared = _moved(quarantined, 2, security_status=SecurityStatus.CLEAN)
    source.commit([adopted])  # type: ignore[list-item]
    source.commit(
        [
            _revised(  # type: ignore[list-item]
                quarantined,
                make_revision(
                    belief_id=belief.id,
                    axis=Axis.SECURITY,
                    from_state="clean",
                    to_state="quarantined",
                    **sentinel,
                ),
                make_revision(
                    belief_id=belief.id,
                    axis=Axis.RETRIEVAL,
                    from_state="restricted",
                    to_state="privileged_only",
                    **sentinel,
                ),
            ),
            _revised(  # type: ignore[list-item]
                cleared,
                make_revision(
                    belief_id=belief.id,
                    axis=Axis.SECURITY,
                    from_state="quarantined",
                    to_state="clean",
                    authority=Authority.POLICY,
                    created_at=at(hours=2),
                ),
            ),
        ]
    )
    _refused(tmp_path, source, 3, "TransitionRefused")


def test_a_revision_without_its_belief_version_is_refused(tmp_path: Path) -> None:
    source = MemoryStore()
    belief, adopted = _adopted()
    revision = make_revision(
        belief_id=belief.id, authority=Authority.POLICY, created_at=at(hours=1)
    )
    source.commit([adopted])  # type: ignore[list-item]
    source.commit([make_draft(make_records(revisions=[revision]), kind="belief.x")])
    _refused(tmp_path, source, 2, "revision-without-version")


def test_two_versions_of_one_belief_in_one_event_are_refused(tmp_path: Path) -> None:
    source = MemoryStore()
    belief, adopted = _adopted()
    first, second = _moved(belief, 1), _moved(_moved(belief, 1), 2)
    source.commit([adopted])  # type: ignore[list-item]
    source.commit([make_draft(make_records(beliefs=[first, second]), kind="belief.x")])
    _refused(tmp_path, source, 2, "one-version-per-event")


@pytest.mark.parametrize(
    ("axis", "from_state"),
    [
        (Axis.SECURITY, "suspicious"),  # the revision misstates where the belief stood
        (None, "clean"),  # a revision that names no axis move
    ],
)
def test_a_revision_that_misstates_its_move_is_refused(
    tmp_path: Path, axis: Axis | None, from_state: str
) -> None:
    source = MemoryStore()
    belief, adopted = _adopted()
    quarantined = _moved(
        belief,
        1,
        security_status=SecurityStatus.QUARANTINED,
        retrieval_status=RetrievalStatus.PRIVILEGED_ONLY,
    )
    sentinel = {"authority": Authority.SENTINEL, "reason": "injection", "created_at": at(hours=1)}
    source.commit([adopted])  # type: ignore[list-item]
    source.commit(
        [
            _revised(  # type: ignore[list-item]
                quarantined,
                make_revision(
                    belief_id=belief.id,
                    axis=axis,
                    from_state=from_state,
                    to_state="quarantined",
                    **sentinel,
                ),
                make_revision(
                    belief_id=belief.id,
                    axis=Axis.RETRIEVAL,
                    from_state="restricted",
                    to_state="privileged_only",
                    **sentinel,
                ),
            )
        ]
    )
    _refused(tmp_path, source, 2, "revision-mismatch")


def test_origin_rewritten_on_a_later_version_is_refused(tmp_path: Path) -> None:
    source = MemoryStore()
    belief, adopted = _adopted()
    laundered = _moved(belief, 1, origin=Origin.user("alice"))
    source.commit([adopted, belief_draft(laundered)])  # type: ignore[list-item]
    _refused(tmp_path, source, 2, "immutable-field")


def test_a_log_the_real_firewall_wrote_imports(tmp_path: Path) -> None:
    """The control: grants, quarantine, clear and corroboration written by the gate pass (the
    grants' user authority vouched for by the host's pinned checkpoint key)."""
    with firewall.open("memory://") as wall:
        with wall.session(project="p", actor="coder", user="alice") as s:
            (page,) = s.observe(
                tool="read_file", content="the cache is warm", origin=EXTERNAL
            ).content
            (other,) = s.observe(
                tool="read_file", content="deploys use argo", origin=EXTERNAL
            ).content
        wall.promote(
            page.id, grant=wall.grant("user", "alice", beliefs=[page.id]), reason="checked"
        )
        wall.quarantine(other.id, reason="injection", authority=Authority.SENTINEL)
        wall.clear(
            other.id, grant=wall.grant("user", "alice", beliefs=[other.id]), reason="false alarm"
        )
        private, public = write_keypair(tmp_path / "keys")
        write_checkpoint(wall.store, CheckpointSigner.from_file(private), actor="cli")
        events = list(wall.store.events())
    source = MemoryStore()
    source.append_sealed(events)
    result, target = _import(tmp_path, source, "--key", str(public))
    assert result.exit_code == 0, result.output
    assert target.head() == source.head()
    target.close()


# -- --key: the tail must be signed ------------------------------------------------------------


def _signed_source(tmp_path: Path, tail: int) -> tuple[MemoryStore, Path]:
    private, public = write_keypair(tmp_path / "keys")
    source = MemoryStore()
    source.commit([make_draft(kind="test.note") for _ in range(3)])
    write_checkpoint(source, CheckpointSigner.from_file(private), actor="cli")
    if tail:
        source.commit([make_draft(kind="test.note") for _ in range(tail)])
    return source, public


def test_key_import_refuses_events_past_the_last_signed_checkpoint(tmp_path: Path) -> None:
    source, public = _signed_source(tmp_path, tail=2)
    result, target = _import(tmp_path, source, "--key", str(public))
    assert result.exit_code != 0
    assert "2 event(s) (seq 5..6)" in result.output and "gnomon log checkpoint" in result.output
    assert target.head()[0] == 0
    target.close()
    url = f"sqlite:///{tmp_path / 'v.db'}"
    export = tmp_path / "log.ndjson"
    assert CliRunner().invoke(cli, ["log", "import", str(export), "--url", url]).exit_code == 0
    verify = CliRunner().invoke(cli, ["log", "verify", "--url", url, "--key", str(public)])
    assert verify.exit_code != 0 and "2 event(s)" in verify.output


def test_key_import_accepts_a_log_ending_with_its_checkpoint(tmp_path: Path) -> None:
    source, public = _signed_source(tmp_path, tail=0)
    result, target = _import(tmp_path, source, "--key", str(public))
    assert result.exit_code == 0, result.output
    target.close()


def test_unreadable_records_are_a_typed_error() -> None:
    source = MemoryStore()
    source.commit([make_draft(kind="test.note")])
    (event,) = source.events()
    broken = type(event)(
        **{
            **{f: getattr(event, f) for f in event.__dataclass_fields__},
            "payload": {"records": {"beliefs": [{"id": 1}]}},
        }
    )
    with pytest.raises(LogIntegrityError):
        check_transitions(MemoryStore(), [broken], verified=True)


# -- authority needs a key: a hostile agent's hand-written log -----------------------------------


def _forged_user_promotion() -> tuple[MemoryStore, Belief]:
    """An external page, then a 'user' promotion naming a made-up grant id: legal for the gate
    (a user may promote), and JSON anyone can write and re-chain."""
    source = MemoryStore()
    belief, adopted = _adopted()
    promoted = _moved(
        belief, 1, truth_status=TruthStatus.SUPPORTED, retrieval_status=RetrievalStatus.NORMAL
    )
    user = {"authority": Authority.USER, "grant_id": "grt_01J0000000000000000000000"}
    source.commit([adopted])  # type: ignore[list-item]
    source.commit(
        [
            _revised(  # type: ignore[list-item]
                promoted,
                make_revision(belief_id=belief.id, created_at=at(hours=1), **user),
                make_revision(
                    belief_id=belief.id,
                    axis=Axis.RETRIEVAL,
                    from_state="restricted",
                    to_state="normal",
                    created_at=at(hours=1),
                    **user,
                ),
            )
        ]
    )
    return source, belief


def _forged_user_statement() -> tuple[MemoryStore, Belief]:
    """A 'user said so' belief with its human evidence: adopted supported by the gate."""
    source = MemoryStore()
    belief, adopted = _adopted(
        Origin.user("alice"),
        EvidenceQuality.HUMAN_ASSERTION,
        truth_status=TruthStatus.SUPPORTED,
        retrieval_status=RetrievalStatus.NORMAL,
    )
    source.commit([adopted])  # type: ignore[list-item]
    return source, belief


def _forged_user_label() -> tuple[MemoryStore, Belief]:
    """A belief labelled as the user's, held unverified on an external page's evidence: the
    gate would adopt it like that, but its label alone is what shipping and the credential
    rules trust (a user's text is not the agent's free text)."""
    source = MemoryStore()
    belief = make_belief(
        origin=Origin.user("alice"),
        authority=Authority.AUTO_OBSERVATION,
        truth_status=TruthStatus.UNVERIFIED,
        retrieval_status=RetrievalStatus.RESTRICTED,
    )
    evidence = make_evidence(
        claim_id=belief.claim_id, quality=EvidenceQuality.EXTERNAL_DOCUMENT, origin=EXTERNAL
    )
    source.commit([make_draft(make_records(evidence=[evidence], beliefs=[belief]))])
    return source, belief


def _forged_kernel_allowance() -> tuple[MemoryStore, None]:
    """An action-kernel proposal the 'kernel' allowed: a host would execute it."""
    source = MemoryStore()
    data = {
        "request_id": "req_01J0000000000000000000000",
        "action_id": "act_01J0000000000000000000000",
        "tool": "git_push",
        "args": {"repo": "/srv/app", "remote": "origin", "branch": "main"},
        "outcome": "allow",
    }
    source.commit([make_draft(kind="action.proposed", data=data)])
    return source, None


def _forged_policy_load() -> tuple[MemoryStore, None]:
    """A kernel's policy load naming a digest and key the operator never signed: the log would
    say the actions it recorded ran under that policy."""
    source = MemoryStore()
    data = {
        "policy": "permissive",
        "digest": "0" * 64,
        "key_id": "f" * 16,
        "unsigned": False,
        "source": "/etc/gnomon/policy.yaml",
    }
    source.commit([make_draft(kind="action_policy.loaded", data=data)])
    return source, None


@pytest.mark.parametrize(
    ("forge", "seq", "claim"),
    [
        (_forged_user_promotion, 2, "with user authority"),
        (_forged_user_statement, 1, "attested origin"),
        (_forged_user_label, 1, "claims an attested origin"),
        (_forged_kernel_allowance, 1, "action-kernel record (action.proposed)"),
        (_forged_policy_load, 1, "action-kernel record (action_policy.loaded)"),
    ],
    ids=["user-promotion", "user-statement", "user-label", "kernel-allowance", "policy-load"],
)
def test_authority_in_a_log_no_key_vouches_for_is_refused(
    tmp_path: Path, forge: object, seq: int, claim: str
) -> None:
    source, _ = forge()  # type: ignore[operator]
    result, target = _import(tmp_path, source)
    assert result.exit_code != 0, result.output
    assert f"seq {seq}" in result.output and claim in result.output, result.output
    assert "no pinned key vouches" in result.output and "--key" in result.output
    assert "Traceback" not in result.output
    assert target.head()[0] == 0  # nothing imported
    target.close()
    with pytest.raises(UnverifiedAuthorityError) as caught:
        check_transitions(MemoryStore(), list(source.events()), verified=False)
    assert caught.value.seq == seq and claim in caught.value.claim


def test_authority_signed_by_another_key_is_refused(tmp_path: Path) -> None:
    """The attacker signs their own checkpoint: the operator pins their own key, not it."""
    source, belief = _forged_user_promotion()
    mallory, _ = write_keypair(tmp_path / "mallory", "mallory")
    _, operator = write_keypair(tmp_path / "operator", "operator")
    write_checkpoint(source, CheckpointSigner.from_file(mallory), actor="cli")
    result, target = _import(tmp_path, source, "--key", str(operator))
    assert result.exit_code != 0, result.output
    assert target.head()[0] == 0 and target.get_belief(belief.id) is None
    target.close()


def test_authority_signed_by_the_pinned_key_is_imported_with_it(tmp_path: Path) -> None:
    source, belief = _forged_user_promotion()  # here: the operator's own host wrote it
    private, public = write_keypair(tmp_path / "keys")
    write_checkpoint(source, CheckpointSigner.from_file(private), actor="cli")
    result, target = _import(tmp_path, source, "--key", str(public))
    assert result.exit_code == 0, result.output
    supported = target.get_belief(belief.id)
    assert supported is not None and supported.truth_status == TruthStatus.SUPPORTED
    target.close()


def test_a_log_of_untrusted_content_alone_needs_no_key(tmp_path: Path) -> None:
    source = MemoryStore()
    _, adopted = _adopted()
    source.commit([make_draft(kind="test.note"), adopted])  # type: ignore[list-item]
    result, target = _import(tmp_path, source)
    assert result.exit_code == 0, result.output
    assert target.head() == source.head()
    target.close()


# -- a forged verdict on what the importing store already holds ----------------------------------


def _replica_with_forged_tail(
    tmp_path: Path, forge: str
) -> tuple[Path, Path, str, tuple[int, str]]:
    """The operator's store holds a page the agent read. The attacker copies it (an export is
    all they need), runs Gnomon on the copy to write a verdict the operator never made, and hands
    the copy's log back for the operator to import: every event before the tail is the
    operator's own, so the chain joins perfectly."""
    target = tmp_path / "operator.db"
    with firewall.open(f"sqlite:///{target}") as wall:
        with wall.session(project="p", actor="coder", user="alice") as s:
            (page,) = s.observe(
                tool="read_file", content="the cache is warm", origin=EXTERNAL
            ).content
        head = wall.store.head()
    forged = tmp_path / "copy.db"
    # a byte copy of the file would be read-only for authority (no sealing key): the attacker
    # replays the export into a store of its own, sealed with its own key
    with SQLiteStore(target) as original, SQLiteStore(forged) as copy:
        copy.append_sealed(list(original.events()))
    with firewall.open(f"sqlite:///{forged}") as wall:
        if forge == "flag":  # flags the user: the arbiter would hold every action citing her
            assert wall.flag_origin("user:alice", reason="forged", actor="sentinel") == []
        else:  # the store's own belief quarantined: retrieval loses it
            wall.quarantine(page.id, reason="forged", authority=Authority.SENTINEL)
        export_to_file(wall.store.chain_rows(), tmp_path / "log.ndjson")
    return target, tmp_path / "log.ndjson", page.id, head


@pytest.mark.parametrize(
    ("forge", "claim"),
    [("flag", "sentinel's verdict (origin.flagged)"), ("quarantine", "already held")],
)
def test_a_forged_verdict_on_the_stores_own_beliefs_needs_a_key(
    tmp_path: Path, forge: str, claim: str
) -> None:
    target, log, page_id, head = _replica_with_forged_tail(tmp_path, forge)
    url = f"sqlite:///{target}"
    result = CliRunner().invoke(cli, ["log", "import", str(log), "--url", url])
    assert result.exit_code != 0, result.output
    assert claim in result.output and "no pinned key vouches" in result.output, result.output
    assert "Traceback" not in result.output
    store = SQLiteStore(target)
    try:
        assert store.head() == head  # nothing imported
        belief = store.get_belief(page_id)
        assert belief is not None and belief.security_status == SecurityStatus.CLEAN
        assert not [e for e in store.events() if e.kind == "origin.flagged"]
    finally:
        store.close()


def test_a_verdict_the_operators_key_signed_imports(tmp_path: Path) -> None:
    """The control: the same tail, checkpointed with the operator's key, imports."""
    target, _, page_id, _ = _replica_with_forged_tail(tmp_path, "quarantine")
    private, public = write_keypair(tmp_path / "keys")
    copy = SQLiteStore(tmp_path / "copy.db")
    write_checkpoint(copy, CheckpointSigner.from_file(private), actor="cli")
    export_to_file(copy.chain_rows(), tmp_path / "signed.ndjson")
    copy.close()
    url = f"sqlite:///{target}"
    result = CliRunner().invoke(
        cli, ["log", "import", str(tmp_path / "signed.ndjson"), "--url", url, "--key", str(public)]
    )
    assert result.exit_code == 0, result.output
    store = SQLiteStore(target)
    try:
        belief = store.get_belief(page_id)
        assert belief is not None and belief.security_status == SecurityStatus.QUARANTINED
    finally:
        store.close()


def test_a_hand_written_sentinel_alert_needs_a_key() -> None:
    """An alert is JSON anyone can write: it would hold every action citing what it names."""
    data = {"alert_id": "alr_1", "belief_ids": ["blf_x"], "flag_origins": ["user:alice"]}
    source = MemoryStore()
    source.commit([make_draft(kind="sentinel.alert", data=data)])
    with pytest.raises(UnverifiedAuthorityError) as caught:
        check_transitions(MemoryStore(), list(source.events()), verified=False)
    assert "sentinel's verdict (sentinel.alert)" in caught.value.claim
    check_transitions(MemoryStore(), list(source.events()), verified=True)
