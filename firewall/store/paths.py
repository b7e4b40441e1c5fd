"""Where Gnomon keeps what the agent must not reach: the user's data directory.

One function decides it, so that the store, the sealing keys, ``gnomon init`` and
``gnomon doctor`` agree: ``$GNOMON_HOME`` when set (tests, containers, a host that keeps its
state elsewhere), else the platform's user data directory for ``gnomon``
(``platformdirs.user_data_dir``; ``~/.local/share/gnomon`` on Linux). It is never the working
tree, which is where a coding agent runs its shell commands.

>>> import os
>>> os.environ["GNOMON_HOME"] = "/tmp/gnomon-doc-home"
>>> str(data_dir())
'/tmp/gnomon-doc-home'
>>> del os.environ["GNOMON_HOME"]
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

#: The environment variable that moves the data directory.
HOME_ENV = "GNOMON_HOME"


def data_dir() -> Path:
    """``$GNOMON_HOME`` if set, else the platform's user data directory for gnomon."""
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env)
    return Path(platformdirs.user_data_dir("gnomon", appauthor=False))


__all__ = ["HOME_ENV", "data_dir"]
