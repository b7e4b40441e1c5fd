"""Every example in a docstring of the shipped code runs and shows what it says: a user copies
them, so they must not rot."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

from gnomon import adapters, firewall, probes, tools

#: modules whose framework is outside gnomon[all] (test_guard_crewai.py covers it)
OUTSIDE_ALL = ("gnomon.adapters.frameworks.crewai_tools",)


def _modules() -> list[str]:
    names = []
    for package in (firewall, adapters, probes, tools):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name.endswith("__main__"):  # running it would run the CLI
                continue
            if info.name in OUTSIDE_ALL:
                continue  # its extra is not part of gnomon[all]; it has no examples
            names.append(info.name)
    return sorted(names)


MODULES = _modules()


def test_the_walk_finds_the_examples() -> None:
    """The control: the walk reaches the modules that hold examples."""
    finder = doctest.DocTestFinder()
    with_examples = [
        name
        for name in MODULES
        if any(t.examples for t in finder.find(importlib.import_module(name)))
    ]
    assert len(with_examples) >= 20, with_examples
    assert "gnomon.firewall.audit.why" in with_examples


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False, report=True)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
