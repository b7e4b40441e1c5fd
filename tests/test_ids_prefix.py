"""new_id's prefix check is a typed error that holds under ``python -O``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gnomon.firewall.model.errors import InputError
from gnomon.firewall.model.ids import UnknownPrefixError, new_id, new_ids


@pytest.mark.parametrize("make", [new_id, lambda p: new_ids(p, 2)])
@pytest.mark.parametrize("prefix", ["nope", "", "bel_", 3])
def test_unknown_prefix_is_a_typed_error(make, prefix) -> None:
    with pytest.raises(UnknownPrefixError, match="unknown id prefix") as raised:
        make(prefix)
    assert isinstance(raised.value, InputError) and raised.value.hint


def test_prefix_check_holds_under_python_O() -> None:
    code = (
        "from gnomon.firewall.model.ids import new_id, UnknownPrefixError\n"
        "try:\n    new_id('nope')\nexcept UnknownPrefixError:\n    print('refused')\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-O", "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "refused", out.stderr
