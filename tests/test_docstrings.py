"""Docstring examples are executable: they must keep working as the code changes."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "gnomon.firewall",
    "gnomon.firewall.host.firewall",
    "gnomon.firewall.model.origin",
    "gnomon.firewall.gate.grants",
    "gnomon.firewall.host.guard",
    "gnomon.adapters.adapter",
    "gnomon.adapters.base",
    "gnomon.adapters.quoted_fields",
    "gnomon.adapters.withheld",
]


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert tried > 0, f"{name} has no examples"
    assert failures == 0
