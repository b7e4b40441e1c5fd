"""Periodic checkpoints written by the Firewall (``checkpoint_signer=``, ``checkpoint_every=``)."""

from __future__ import annotations

import pytest

from gnomon import firewall
from gnomon.firewall.log.checkpoints import CHECKPOINT_KIND, CheckpointSigner, verify_log
from gnomon.firewall.model.errors import InputError, MissingGrantError
from tests.factories import make_draft


@pytest.fixture
def signer() -> CheckpointSigner:
    return CheckpointSigner.generate()


def test_firewall_writes_periodic_checkpoints(signer: CheckpointSigner) -> None:
    wall = firewall.open("memory://", checkpoint_signer=signer, checkpoint_every=5)
    for i in range(12):
        wall.commit(make_draft(data={"i": i}))
    kinds = [e.kind for e in wall.store.events()]
    assert kinds.count(CHECKPOINT_KIND) == 2
    report = verify_log(wall.store.chain_rows(), keys=[signer.public_key])
    assert report.ok and report.checkpoints == 2
    assert wall.checkpoint().seq == wall.store.head()[0] - 1


def test_firewall_checkpoint_options_are_checked() -> None:
    with pytest.raises(InputError):
        firewall.open("memory://", checkpoint_every=10)
    with pytest.raises(MissingGrantError):
        firewall.open("memory://").checkpoint()
