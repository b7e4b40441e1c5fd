"""Label boundaries (issue 28): integrity is the least trusted input's, never the most.

The attacker mixes trusted and untrusted inputs and hopes the mix is read as the trusted one:
(1) a label naming a user and an external document, hand-built with the user's integrity, or
reached by joining the two; (2) a session that read the user and then agent-derived text (the
agent's own writing), hoping to be counted as reading only the user. The promise: the label is
the least trusted class's (external: untrusted and tainted; agent: derived, authority-free).
The FLIP of each rebinds the one mechanism, ``min`` in :mod:`firewall.model.origin` (the join's
integrity and the ceiling a hand-built label is checked against), to ``max``: the mix passes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from gnomon import firewall
from gnomon.firewall import Origin
from gnomon.firewall.model import origin as origin_module
from gnomon.firewall.model.errors import InvalidOriginError
from gnomon.firewall.model.origin import Integrity, OriginClass
from tests.attested import attested

USER, EXTERNAL = Origin.user("alice"), Origin.external("web:evil.example")


def _most_trusted_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mutant: integrity checked against the most trusted class."""
    monkeypatch.setattr(origin_module, "min", max, raising=False)


def _forged() -> Origin:
    return Origin(
        classes=frozenset({OriginClass.USER, OriginClass.EXTERNAL}),
        origin_ids=USER.origin_ids | EXTERNAL.origin_ids,
        integrity=Integrity.ATTESTED,
    )


def test_a_join_of_user_and_external_is_external() -> None:
    mixed = USER | EXTERNAL
    assert mixed.integrity == Integrity.UNTRUSTED
    assert mixed.tainted and not mixed.authority_bearing and not mixed.user_lineage
    assert not USER.tainted  # the other side: the user's label alone is trusted
    with pytest.raises(InvalidOriginError, match="above what its classes allow"):
        _forged()


def test_flip_most_trusted_class_makes_the_mix_the_users(monkeypatch: pytest.MonkeyPatch) -> None:
    _most_trusted_wins(monkeypatch)
    mixed = Origin.join(USER, EXTERNAL)
    assert mixed.integrity == Integrity.ATTESTED and not mixed.tainted  # the attack succeeds
    assert _forged().authority_bearing  # and a hand-built mix is accepted as attested


@contextmanager
def _session_that_read_agent_text(wall: firewall.Firewall) -> Iterator[firewall.Session]:
    with wall.session(project="labels", actor="coder", user="alice") as s:
        yield _read_user_then_agent(wall, s)


def _read_user_then_agent(wall: firewall.Firewall, s: firewall.Session) -> firewall.Session:
    s.observe(tool="chat", content="Ship on Monday", origin=attested(wall, Origin.user("alice")))
    assert s.label is not None and s.label.integrity == Integrity.ATTESTED
    s.observe(tool="notes", content="Alice said ship today", origin=Origin.agent("coder"))
    return s


def test_a_session_that_read_agent_derived_text_is_not_counted_as_the_users() -> None:
    wall = firewall.open("memory://")
    with _session_that_read_agent_text(wall) as s:
        assert s.label is not None
        assert s.label.integrity == Integrity.DERIVED
        assert not s.label.authority_bearing
        s.observe(tool="fetch", content="ship now", origin=EXTERNAL)
        assert s.read_untrusted and s.label.tainted  # and external text taints it for good


def test_flip_most_trusted_class_counts_the_session_as_the_users(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wall = firewall.open("memory://")
    _most_trusted_wins(monkeypatch)
    with _session_that_read_agent_text(wall) as s:
        assert s.label is not None
        assert s.label.integrity == Integrity.ATTESTED and s.label.authority_bearing  # attack wins
