"""Attacks with malformed input: every public entry answers with a typed error naming the field.

Each case is the hostile call a buggy or prompt-injected caller makes (a lone surrogate, a naive
datetime, an enum value as a plain string, a wrong type); the answer must be an ``InputError``
(or a more specific ``GnomonError``) whose message names the offending argument, and nothing may
have been written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from gnomon import firewall
from gnomon.firewall import Origin
from gnomon.firewall.host.firewall import ImportItem
from gnomon.firewall.host.session import Session
from gnomon.firewall.model.errors import InputError, InvalidOriginError

NAIVE = datetime(2026, 1, 1)
AWARE = datetime(2026, 1, 1, tzinfo=UTC)
SURROGATE = "deploy \ud800 notes"


@pytest.fixture
def wall() -> Iterator[firewall.Firewall]:
    with firewall.open("memory://") as w:
        yield w


def _prepared(s: Session) -> dict[str, str]:
    seen = s.observe(tool="read_file", content="the deploy notes")
    decision = s.decide("go", [seen.content[0].id], policy="reference")
    action = s.act(decision.id, "deploy")
    return {"belief": seen.content[0].id, "decision": decision.id, "action": action.id}


CASES: list[tuple[str, Callable[[Session, dict[str, str]], Any], str]] = [
    (
        "observe-subject",
        lambda s, i: s.observe(tool="t", content="x", subject=SURROGATE),
        "subject",
    ),
    (
        "observe-naive",
        lambda s, i: s.observe(tool="t", content="x", expires_at=NAIVE),
        "expires_at",
    ),
    (
        "observe-enum",
        lambda s, i: s.observe(tool="t", content="x", sensitivity="public"),
        "sensitivity",
    ),
    ("observe-args", lambda s, i: s.observe(tool="t", content="x", args={"k": SURROGATE}), "args"),
    (
        "observe-version",
        lambda s, i: s.observe(tool="t", content="x", tool_version=3),
        "tool_version",
    ),
    ("remember-predicate", lambda s, i: s.remember("x", predicate=SURROGATE), "predicate"),
    ("remember-valid", lambda s, i: s.remember("x", valid_from=NAIVE), "valid_from"),
    ("remember-contradicts", lambda s, i: s.remember("x", contradicts=[3]), "contradicts"),
    ("recall-query", lambda s, i: s.recall(SURROGATE), "query"),
    ("recall-k", lambda s, i: s.recall("x", k=True), "k"),
    ("decide-depends", lambda s, i: s.decide("go", [3]), "depends_on"),
    ("act-args", lambda s, i: s.act(i["decision"], "ship", args={"when": NAIVE}), "args"),
    (
        "outcome-summary",
        lambda s, i: s.record_outcome(i["action"], success=True, summary=b"x"),
        "summary",
    ),
    ("outcome-success", lambda s, i: s.record_outcome(i["action"], success="yes"), "success"),
    (
        "corroborate-relation",
        lambda s, i: s.corroborate(i["belief"], "obs_x", relation="supports"),
        "relation",
    ),
    (
        "corroborate-required",
        lambda s, i: s.corroborate(i["belief"], "obs_x", required="1"),
        "required",
    ),
    ("corroborate-id", lambda s, i: s.corroborate(SURROGATE, "obs_x"), "belief_id"),
]


@pytest.mark.parametrize(("case", "call", "field"), CASES, ids=[c[0] for c in CASES])
def test_session_entries_name_the_bad_field(
    wall: firewall.Firewall, case: str, call: Callable[[Session, dict[str, str]], Any], field: str
) -> None:
    with wall.session(project="shop", actor="coder", user="alice") as s:
        ids = _prepared(s)
        before = wall.store.head()
        with pytest.raises(InputError, match=field):
            call(s, ids)
        assert wall.store.head() == before, "nothing may be written"


HOST_CASES: list[tuple[str, Callable[[firewall.Firewall], Any], str]] = [
    (
        "session-model",
        lambda w: w.session(project="p", actor="a", model_id=SURROGATE).__enter__(),
        "model_id",
    ),
    ("grant-authority", lambda w: w.grant("root", "alice"), "authority"),
    ("grant-subject", lambda w: w.grant("user", 3), "subject"),
    ("audit-limit", lambda w: w.audit(grant=w.grant("auditor", "x"), limit="5"), "limit"),
    ("audit-query", lambda w: w.audit(SURROGATE, grant=w.grant("auditor", "x")), "query"),
    (
        "import-item",
        lambda w: w.import_records(["text"], store_name="m", project="p"),
        "ImportItem",
    ),
    (
        "import-source",
        lambda w: w.import_records([ImportItem("x", SURROGATE)], store_name="m", project="p"),
        "items",
    ),
    (
        "import-naive",
        lambda w: w.import_records([ImportItem("x", "1", NAIVE)], store_name="m", project="p"),
        "timezone",
    ),
    ("transition-reason", lambda w: w.transition("bel_x", [], reason=SURROGATE), "reason"),
    ("open-envelope", lambda w: firewall.open("memory://", envelope_args=[3]), "envelope_args"),
    ("open-blocks", lambda w: firewall.open("memory://", max_block_bytes="10"), "max_block_bytes"),
]


@pytest.mark.parametrize(("case", "call", "field"), HOST_CASES, ids=[c[0] for c in HOST_CASES])
def test_host_entries_name_the_bad_field(
    wall: firewall.Firewall, case: str, call: Callable[[firewall.Firewall], Any], field: str
) -> None:
    before = wall.store.head()
    with pytest.raises(InputError, match=field):
        call(wall)
    assert wall.store.head() == before


@pytest.mark.parametrize("name", ["user", "tool", "external", "agent", "probe", "imported"])
def test_origin_constructors_refuse_lone_surrogates(name: str) -> None:
    with pytest.raises(InvalidOriginError, match="origin name"):
        getattr(Origin, name)(SURROGATE)


@pytest.mark.parametrize("bad", [None, "user:alice", {"classes": ["user"]}])
def test_origin_join_refuses_what_is_not_a_label(bad: object) -> None:
    with pytest.raises(InvalidOriginError, match="join"):
        Origin.join(Origin.agent("coder"), bad)  # type: ignore[arg-type]
