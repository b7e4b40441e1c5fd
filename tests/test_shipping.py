"""Session shipping as attacks: an export with a sensitivity ceiling never carries the text of a
record above it, nor that text smuggled by a hostile agent into unlabelled fields of other events
(a recall's query, an action's arguments, a decision's summary, alert and review reasons, an
origin id), in the same session or another; it still verifies (with the count of redacted events
and why), and any tampering with the shipped file (a kept body, a digest, a hash, a dropped
event) fails verification. A log with nothing above the ceiling ships whole."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from gnomon import firewall
from gnomon.firewall.audit.shipping import ship_to_file, verify_file
from gnomon.firewall.cli import cli
from gnomon.firewall.log.events import body_digest
from gnomon.firewall.log.ndjson import read_events, read_file
from gnomon.firewall.model.errors import LogFormatError, RedactionError
from gnomon.firewall.model.states import Sensitivity

SECRET = "the vault root token is s.QxZ81-do-not-ship"
FIXTURE = Path(__file__).parent / "fixtures" / "log_schema1.ndjson"


def _load_fixture(url: str) -> None:
    """The old log as the store it came from (it holds users' statements, which ``gnomon log
    import`` takes only under a pinned key: here the test is the shipping, not the import)."""
    with firewall.open(url) as wall:
        wall.store.append_sealed(read_events(read_file(FIXTURE), str(FIXTURE)))


def _store(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url) as wall, wall.session(project="shop", actor="coder") as s:
        s.observe(tool="read_file", content="deploys go through ArgoCD")
        s.remember(SECRET, sensitivity=Sensitivity.SECRET)
        s.remember("the on-call rota is in the wiki")
    return url


def _ship(url: str, out: Path, ceiling: str = "internal") -> dict[str, object]:
    result = CliRunner().invoke(
        cli,
        [
            "log",
            "export",
            "--url",
            url,
            "--out",
            str(out),
            "--sensitivity-ceiling",
            ceiling,
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    summary: dict[str, object] = json.loads(result.output)
    return summary


def _verify(path: Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["log", "verify", "--file", str(path)])
    return result.exit_code, result.output


def test_a_shipped_export_redacts_the_secret_and_still_verifies(tmp_path: Path) -> None:
    url = _store(tmp_path)
    out = tmp_path / "ship.ndjson"
    summary = _ship(url, out)
    # the secret's event by its label; in a log that holds a secret record, the observation by
    # its unlabelled tool name and the agent's note by its text (the agent chose it)
    assert summary["redacted"] == 3 and summary["sensitivity_ceiling"] == "internal"
    assert summary["reasons"] == {"label": 1, "log_above_ceiling": 2}
    text = out.read_text()
    assert SECRET not in text and "s.QxZ81" not in text
    assert "the on-call rota is in the wiki" not in text, "an agent's note is free text"
    assert _kept_kinds(out) == ["session.started", "session.ended"], "no free text: kept"
    code, output = _verify(out)
    assert code == 0, output
    assert "redacted: 3 event(s)" in output
    report = verify_file(out)
    assert report.ok and report.redacted == 3
    # the digest kept is the digest of the event the store holds (the holder can show it)
    with firewall.open(url) as wall:
        secret_event = next(e for e in wall.store.events() if SECRET.encode() in e.body)
    shipped = next(x for x in _lines(out)[1:] if x["seq"] == secret_event.seq)
    assert shipped["body_digest"] == body_digest(secret_event.body)
    assert shipped["hash"] == secret_event.hash


def test_a_ceiling_of_secret_redacts_nothing_and_matches_the_plain_export(tmp_path: Path) -> None:
    url = _store(tmp_path)
    shipped, plain = tmp_path / "ship.ndjson", tmp_path / "plain.ndjson"
    assert _ship(url, shipped, "secret")["redacted"] == 0
    CliRunner().invoke(cli, ["log", "export", "--url", url, "--out", str(plain)])
    assert shipped.read_text().splitlines()[1:] == plain.read_text().splitlines()[1:]


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _kept_kinds(path: Path) -> list[str]:
    """The kinds of the events a shipped file keeps in clear, in order."""
    return [json.loads(str(x["body"]))["kind"] for x in _lines(path)[1:] if "body" in x]


def _write(path: Path, lines: list[dict[str, object]]) -> None:
    path.write_bytes(b"".join(orjson.dumps(x, option=orjson.OPT_SORT_KEYS) + b"\n" for x in lines))


@pytest.mark.parametrize("tamper", ["kept_body", "digest", "hash", "drop", "reorder", "unredact"])
def test_attack_tampering_with_a_shipped_export_fails_verification(
    tmp_path: Path, tamper: str
) -> None:
    url = _store(tmp_path)
    out = tmp_path / "ship.ndjson"
    _ship(url, out)
    lines = _lines(out)
    red = next(i for i, x in enumerate(lines) if "body_digest" in x)
    kept = next(i for i, x in enumerate(lines) if i > 0 and "body" in x and i != red)
    if tamper == "kept_body":
        body = str(lines[kept]["body"])
        lines[kept]["body"] = body.replace('"actor":"coder"', '"actor":"mallory"')
        assert lines[kept]["body"] != body
    elif tamper == "digest":
        digest = str(lines[red]["body_digest"])
        lines[red]["body_digest"] = ("0" if digest[0] != "0" else "1") + digest[1:]
    elif tamper == "hash":
        digest = str(lines[red]["hash"])
        lines[red]["hash"] = ("0" if digest[0] != "0" else "1") + digest[1:]
    elif tamper == "drop":
        del lines[red]
    elif tamper == "reorder":
        lines[red], lines[red + 1] = lines[red + 1], lines[red]
    else:  # a redacted line claims a different, harmless body under the same hash
        swapped = dict(lines[red])
        del swapped["body_digest"], swapped["redacted"]
        swapped["body"] = str(lines[kept]["body"])
        lines[red] = swapped
    _write(out, lines)
    code, output = _verify(out)
    assert code != 0, output
    assert not verify_file(out).ok


def test_attack_a_shipped_export_cannot_be_imported_as_a_log(tmp_path: Path) -> None:
    url = _store(tmp_path)
    out = tmp_path / "ship.ndjson"
    _ship(url, out)
    with pytest.raises(LogFormatError, match="redacted"):
        read_events(read_file(out), str(out))
    target = f"sqlite:///{tmp_path / 'other.db'}"
    result = CliRunner().invoke(cli, ["log", "import", str(out), "--url", target])
    assert result.exit_code != 0 and "redacted" in result.output


def test_old_logs_still_verify_and_ship_when_nothing_is_above_the_ceiling(tmp_path: Path) -> None:
    report = verify_file(FIXTURE)
    assert report.ok and report.redacted == 0 and report.events > 0
    url = f"sqlite:///{tmp_path / 'old.db'}"
    _load_fixture(url)
    with firewall.open(url) as wall, wall.session(project="shop", actor="coder") as s:
        s.remember("new fact after the upgrade")
    assert CliRunner().invoke(cli, ["log", "verify", "--url", url]).exit_code == 0
    out = tmp_path / "ship.ndjson"
    _ship(url, out, "secret")
    assert verify_file(out).ok


def test_a_version1_event_above_the_ceiling_is_refused_not_leaked(tmp_path: Path) -> None:
    """Hash version 1 links need the whole body: such an event cannot be redacted and still
    verify, so the export is refused and no file is left behind."""
    levels = {
        b["sensitivity"]
        for line in FIXTURE.read_text().splitlines()[1:]
        for key, items in json.loads(json.loads(line)["body"])
        .get("payload", {})
        .get("records", {})
        .items()
        if key in ("beliefs", "claims", "observations")
        for b in items
    }
    assert "internal" in levels, "the fixture holds internal records"
    url = f"sqlite:///{tmp_path / 'old.db'}"
    _load_fixture(url)
    out = tmp_path / "ship.ndjson"
    with firewall.open(url) as wall, pytest.raises(RedactionError, match="hash version 1"):
        ship_to_file(wall.store.chain_rows, out, Sensitivity.PUBLIC)
    assert not out.exists()


def test_attack_a_secret_inside_an_import_batch_is_redacted(tmp_path: Path) -> None:
    """An import batch (one compact event for many records) is judged by the records it stands
    for, not by where a label sits in its JSON: one secret row redacts the batch event."""
    from gnomon.firewall import ImportItem

    url = f"sqlite:///{tmp_path / 'g.db'}"
    items = [
        ImportItem(text=f"public fact {i}", source_id=f"m{i}", sensitivity=Sensitivity.PUBLIC)
        for i in range(5)
    ] + [ImportItem(text=SECRET, source_id="m-secret", sensitivity=Sensitivity.SECRET)]
    with firewall.open(url) as wall:
        assert wall.import_records(items, store_name="mem0", project="shop") == 6
    out = tmp_path / "ship.ndjson"
    assert _ship(url, out)["redacted"] == 1
    assert SECRET not in out.read_text() and verify_file(out).ok


def test_a_shipped_export_keeps_its_signed_checkpoints(tmp_path: Path) -> None:
    """The checkpoint signed over the full log verifies on the shipped one: it signs the chain
    head, and the chain is the same whatever was redacted."""
    from gnomon.firewall.log.checkpoints import CheckpointSigner, write_checkpoint

    url = _store(tmp_path)
    signer = CheckpointSigner.generate()
    with firewall.open(url) as wall:
        write_checkpoint(wall.store, signer)
    out = tmp_path / "ship.ndjson"
    redacted = _ship(url, out)["redacted"]
    report = verify_file(out, keys=[signer.public_key])
    assert report.ok and report.redacted == redacted == 3 and report.signed_through is not None
    other = CheckpointSigner.generate()
    assert not verify_file(out, keys=[other.public_key]).ok, "an unpinned signer is refused"


# -- secret text smuggled into unlabelled fields ---------------------------------------------------

SMUGGLED = "QxZ81-do-not-ship"  # the part of SECRET a hostile agent copies into other fields


def _smuggle(wall: firewall.Firewall, how: str) -> None:
    """The agent read SECRET in one session; in ANOTHER it puts the text where no label is."""
    from gnomon.firewall.host.sentinels.sentinel import Sentinel

    with wall.session(project="shop", actor="coder") as s:
        s.remember(SECRET, sensitivity=Sensitivity.SECRET)
        s.remember("the on-call rota is in the wiki")
    user = wall.channel(firewall.Origin.user("alice"), project="shop")
    with wall.session(project="shop", actor="coder", user="alice") as s:
        lesson = s.observe(tool="chat", content="deploys go through ArgoCD", origin=user)
        belief = lesson.content[0]
        if how == "recall_query":
            s.recall(f"what is {SMUGGLED} for", "default")
        elif how == "action_arguments":
            decision = s.decide("set the config", depends_on=[belief.id])
            s.act(decision.id, "write_file", {"path": "cfg", SMUGGLED: SMUGGLED})
        elif how == "decision_summary":
            s.decide(f"rotate {SMUGGLED} tonight", depends_on=[belief.id])
        elif how == "outcome_summary":
            decision = s.decide("set the config", depends_on=[belief.id])
            action = s.act(decision.id, "write_file", {"path": "cfg"})
            s.record_outcome(action.id, success=True, summary=f"wrote {SMUGGLED}")
        elif how == "origin_id":
            s.observe(tool="read_file", content="x", origin=firewall.Origin.external(SMUGGLED))
    if how == "alert_reason":
        wall.quarantine(
            belief.id, reason=f"leaked {SMUGGLED}", authority=firewall.Authority.SENTINEL
        )
    elif how == "flagged_origin":
        Sentinel(wall).flag_origin(f"external:file:{SMUGGLED}", reason="planted")
    elif how == "review_reason":
        from gnomon.firewall.host.review import approve

        grant = wall.grant("user", "alice", beliefs=[belief.id])
        approve(wall, belief.id, grant=grant, reason=f"checked against {SMUGGLED}")


ATTACKS = [
    "recall_query",
    "action_arguments",
    "decision_summary",
    "outcome_summary",
    "origin_id",
    "alert_reason",
    "flagged_origin",
    "review_reason",
]


@pytest.mark.parametrize("how", ATTACKS)
def test_attack_secret_text_smuggled_into_unlabelled_fields_does_not_ship(
    tmp_path: Path, how: str
) -> None:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url) as wall:
        _smuggle(wall, how)
        smuggled = [e.seq for e in wall.store.events() if SMUGGLED.encode() in e.body]
    assert len(smuggled) >= 2, "the secret's text is in its own event and in another one"
    out = tmp_path / "ship.ndjson"
    summary = _ship(url, out)
    text = out.read_text()
    assert SMUGGLED not in text, f"{how}: the secret's text left in the shipped file"
    assert summary["reasons"]["log_above_ceiling"] >= 1  # type: ignore[index]
    shipped = {x["seq"]: x for x in _lines(out)[1:]}
    assert all("body_digest" in shipped[seq] for seq in smuggled)
    code, output = _verify(out)
    assert code == 0, output
    # the agent's note is free text in a log holding a secret; what carries no free text ships
    assert "the on-call rota is in the wiki" not in text
    assert _kept_kinds(out)[:2] == ["session.started", "session.ended"]


def test_attack_an_id_shaped_query_is_still_free_text(tmp_path: Path) -> None:
    """A field is judged by what it is, not by how its value looks: a recall query shaped like
    a belief id (the secret hex-encoded) is a query, so it is redacted."""
    encoded = "bel_" + SMUGGLED.encode()[:14].hex()
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url) as wall:
        with wall.session(project="shop", actor="coder") as s:
            s.remember(SECRET, sensitivity=Sensitivity.SECRET)
        with wall.session(project="shop", actor="coder") as s:
            s.recall(encoded, "default")
    out = tmp_path / "ship.ndjson"
    _ship(url, out)
    assert encoded not in out.read_text()
    assert verify_file(out).ok


def test_attack_a_credential_in_unlabelled_text_is_redacted_without_any_secret_record(
    tmp_path: Path,
) -> None:
    """Nothing is labelled above the ceiling, but a live key pasted into a recall query (or a
    record labelled public) is still found by the credential scanner and withheld."""
    key = "ADMIN_TOKEN = 'sk-live-4f9a1c0ffee1234'"
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url) as wall, wall.session(project="shop", actor="coder") as s:
        s.recall(f"where do I put {key}", "default")
        s.remember(f"the key is {key}", sensitivity=Sensitivity.PUBLIC)
        s.remember("the on-call rota is in the wiki")
    out = tmp_path / "ship.ndjson"
    summary = _ship(url, out)
    assert summary["reasons"] == {"credential": 2}
    text = out.read_text()
    assert "sk-live-4f9a1c0ffee1234" not in text
    assert "the on-call rota is in the wiki" in text
    assert verify_file(out).ok


def test_a_log_with_nothing_above_the_ceiling_ships_whole(tmp_path: Path) -> None:
    """Utility: free text is withheld only because of what else the log holds. With no record
    above the ceiling (and no credential), queries, arguments, summaries and reasons all ship,
    byte for byte the plain export."""
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with firewall.open(url) as wall:
        user = wall.channel(firewall.Origin.user("alice"), project="shop")
        with wall.session(project="shop", actor="coder", user="alice") as s:
            belief = s.observe(tool="chat", content="deploys use ArgoCD", origin=user).content[0]
            s.remember("the on-call rota is in the wiki", sensitivity=Sensitivity.INTERNAL)
            s.recall("on-call rota", "default")
            decision = s.decide("page the on-call", depends_on=[belief.id])
            action = s.act(decision.id, "page", {"who": "on-call"})
            s.record_outcome(action.id, success=True, summary="paged")
        wall.quarantine(belief.id, reason="double-check", authority=firewall.Authority.SENTINEL)
    shipped, plain = tmp_path / "ship.ndjson", tmp_path / "plain.ndjson"
    summary = _ship(url, shipped)
    assert summary["redacted"] == 0 and summary["reasons"] == {}
    CliRunner().invoke(cli, ["log", "export", "--url", url, "--out", str(plain)])
    assert shipped.read_text().splitlines()[1:] == plain.read_text().splitlines()[1:]
    assert "on-call rota" in shipped.read_text() and "double-check" in shipped.read_text()


def test_shipping_a_one_pass_iterable_is_a_typed_error(tmp_path: Path) -> None:
    """Shipping reads the log twice: handed the rows themselves (a generator) it says so."""
    from gnomon.firewall.model.errors import InputError

    url = _store(tmp_path)
    with firewall.open(url) as wall, pytest.raises(InputError, match="chain_rows"):
        ship_to_file(wall.store.chain_rows(), tmp_path / "x.ndjson", Sensitivity.INTERNAL)  # type: ignore[arg-type]
    assert not (tmp_path / "x.ndjson").exists()
