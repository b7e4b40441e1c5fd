"""Attacks on the default-deny walk of :mod:`firewall.audit.free_text`: text someone chose,
put where a structural value belongs, must be found (``free``) or at least handed to the
credential scan (``texts``). Each case is one field rule the walk relies on."""

from __future__ import annotations

import base64

import pytest

from gnomon.firewall.audit.free_text import scan_payload
from gnomon.firewall.log.events import IMPORTS

SECRET = "the payroll key is pk-1"
BEL = "bel_" + "0" * 28
CLM = "clm_" + "1" * 28
TOOL = {"classes": ["tool"], "integrity": "observed"}


@pytest.mark.parametrize(
    ("smuggled", "clean"),
    [
        ({"level": SECRET}, {"level": "L3"}),
        ({"signature": SECRET}, {"signature": base64.b64encode(b"\x07" * 64).decode()}),
        ({"rejected": {SECRET: "truth"}}, {"rejected": {BEL: "truth"}}),
        ({"rejected": {BEL: SECRET}}, {"rejected": {BEL: "truth"}}),
        ({"moves": {"rows": [[BEL, SECRET, 0, []]]}}, {"moves": {"rows": [[BEL, 2, 0, []]]}}),
        ({"moves": {"rows": [[BEL, 2, SECRET, []]]}}, {"moves": {"rows": [[BEL, 2, 0, []]]}}),
    ],
    ids=["level", "signature", "by-id-key", "by-id-value", "move-version", "move-index"],
)
def test_attack_text_in_a_structural_field_is_free(
    smuggled: dict[str, object], clean: dict[str, object]
) -> None:
    assert scan_payload(clean).free is False
    scan = scan_payload(smuggled)
    assert scan.free and any(SECRET in text for text in scan.texts), scan


def test_attack_evidence_is_skipped_only_with_a_labelled_claim_the_agent_did_not_write() -> None:
    """Evidence rides on its claim's label only when that claim is in the same event and not
    the agent's: evidence alone, or for an agent's claim, is free text."""
    evidence = {"claim_id": CLM, "source": SECRET}
    alone = scan_payload({"records": {"evidence": [evidence]}})
    agents = {"id": CLM, "origin": {"classes": ["agent"]}}  # no text of its own
    with_agent = scan_payload({"records": {"claims": [agents], "evidence": [evidence]}})
    tools = {"id": CLM, "statement": "x", "origin": TOOL}
    with_tool = scan_payload({"records": {"claims": [tools], "evidence": [evidence]}})
    assert alone.free and with_agent.free
    assert not with_tool.free and SECRET in with_tool.texts


@pytest.mark.parametrize("origin", [{}, {"classes": []}, {"classes": "tool"}, None])
def test_attack_a_labelled_record_without_a_readable_origin_is_the_agents(origin: object) -> None:
    belief = {"id": BEL, "statement": SECRET, "origin": origin}
    assert scan_payload({"records": {"beliefs": [belief]}}).free


def test_unknown_keys_of_a_labelled_record_reach_the_credential_scan() -> None:
    observation = {"id": "obs_" + "2" * 28, "origin": TOOL, SECRET: 1}
    scan = scan_payload({"records": {"observations": [observation]}})
    assert not scan.free and SECRET in scan.texts


def test_attack_a_callers_data_is_free_text_even_under_structural_names() -> None:
    """Under ``args`` every string is the caller's, however its key is named: a key the host
    would otherwise trust (``user``, ``project``) does not make the value structural."""
    for key in ("user", "project", "id", "level"):
        assert scan_payload({"args": {key: SECRET}}).free, key
    assert scan_payload({"args": {SECRET: 1}}).free


def test_attack_labelled_records_above_the_ceiling_are_free_text() -> None:
    """``labelled_ok=False`` (a record of the event is above the ceiling): no record's text
    rides on its label, not a tool's belief, not an import batch's rows."""
    belief = {"id": BEL, "statement": SECRET, "origin": TOOL}
    row = [BEL, CLM, "ev_x", SECRET, "file:x", "internal", "2026-01-01T00:00:00Z", "m1", "0" * 64]
    for payload in (
        {"records": {"beliefs": [belief]}},
        {IMPORTS: {"rows": [row]}},
    ):
        assert not scan_payload(payload).free
        assert scan_payload(payload, labelled_ok=False).free, payload


def test_attack_a_policy_the_caller_named_is_free_text() -> None:
    """A caller may pass its own ContextPolicy to recall or decide, named as it likes: the
    name is structural only when it is a preset's."""
    secret = "pk-payroll-7781"
    for key in ("policy", "policy_id"):
        assert scan_payload({key: secret}).free, key
        assert not scan_payload({key: "default"}).free, key
