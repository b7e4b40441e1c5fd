"""Gnomon: a memory firewall for AI agents, under one import namespace.

The installed distribution holds a single top-level package, ``gnomon``, so it can sit beside
any other distribution (there is an ``adapters`` on the index already):

* :mod:`gnomon.firewall`: the store-agnostic core, in layers (model, gate, log, store, audit,
  kernel, host, cli);
* :mod:`gnomon.adapters`: one module per memory store (mem0, Letta, Zep) and per agent framework;
* :mod:`gnomon.tools`: the governed tool kit (shell, git, filesystem, HTTP, SQL);
* :mod:`gnomon.probes`: the executable threat model;
* :mod:`gnomon.policies`: the YAML ContextPolicy presets.

The core's public names are also reachable from here (``gnomon.open``, ``gnomon.Origin``, ...),
imported on first use so that ``import gnomon.adapters`` does not pay for them.

In a checkout, ``gnomon/firewall`` and its siblings are symlinks to the repository's folders of
the same names; the wheel holds the folders themselves.
"""

from __future__ import annotations

import importlib
from typing import Any

_PACKAGES = ("firewall", "adapters", "probes", "policies", "tools")


def __getattr__(name: str) -> Any:
    if name in _PACKAGES:
        return importlib.import_module(f"gnomon.{name}")
    firewall = importlib.import_module("gnomon.firewall")
    if name in firewall.__all__:
        return getattr(firewall, name)
    raise AttributeError(f"module 'gnomon' has no attribute {name!r}")


def __dir__() -> list[str]:
    firewall = importlib.import_module("gnomon.firewall")
    return sorted([*globals(), *_PACKAGES, *firewall.__all__])
