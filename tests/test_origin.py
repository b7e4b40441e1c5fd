"""Origin labels: constructors, the join lattice, and refusal of malformed names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gnomon.firewall import Integrity, Origin, OriginClass
from gnomon.firewall.model.errors import InvalidOriginError

CONSTRUCTORS = {
    "user": (Origin.user, Integrity.ATTESTED),
    "tool": (Origin.tool, Integrity.OBSERVED),
    "external": (Origin.external, Integrity.UNTRUSTED),
    "agent": (Origin.agent, Integrity.DERIVED),
    "probe": (Origin.probe, Integrity.ATTESTED),
    "imported": (Origin.imported, Integrity.UNTRUSTED),
}


@pytest.mark.parametrize("kind", sorted(CONSTRUCTORS))
def test_constructor_binds_class_id_and_integrity(kind: str) -> None:
    make, integrity = CONSTRUCTORS[kind]
    label = make("x1")
    assert label.classes == frozenset({OriginClass(kind)})
    assert label.origin_ids == frozenset({f"{kind}:x1"})
    assert label.integrity == integrity


def test_join_takes_lowest_integrity_and_union() -> None:
    joined = Origin.user("alice") | Origin.external("file:a.md") | Origin.agent("coder")
    assert joined.integrity == Integrity.UNTRUSTED
    assert joined.classes == {OriginClass.USER, OriginClass.EXTERNAL, OriginClass.AGENT}
    assert joined.origin_ids == {"user:alice", "external:file:a.md", "agent:coder"}
    assert joined.tainted


labels = st.builds(
    lambda kind, name: CONSTRUCTORS[kind][0](name),
    st.sampled_from(sorted(CONSTRUCTORS)),
    st.text(alphabet="abcdefgh:/._-", min_size=1, max_size=12),
)


@given(st.lists(labels, min_size=1, max_size=6), st.lists(labels, min_size=1, max_size=6))
def test_join_never_raises_integrity(left: list[Origin], right: list[Origin]) -> None:
    a, b = Origin.join(*left), Origin.join(*right)
    joined = a | b
    assert joined.integrity == min(a.integrity, b.integrity)
    assert joined.origin_ids == a.origin_ids | b.origin_ids
    assert (a | b) == (b | a)
    assert (joined | joined) == joined


def test_label_round_trips_through_json() -> None:
    label = Origin.user("alice") | Origin.external("https://example.invalid/x")
    again = Origin.model_validate(label.model_dump(mode="json"), strict=False)
    assert again == label


@pytest.mark.parametrize("bad", ["", "a\x00b", "line\nbreak", "x" * 513])
def test_bad_names_are_typed_errors(bad: str) -> None:
    with pytest.raises(InvalidOriginError, match="origin name"):
        Origin.external(bad)


def test_join_of_nothing_is_a_typed_error() -> None:
    with pytest.raises(InvalidOriginError):
        Origin.join()
