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


#: Where stores and keys lived before they moved to the data directory (relative to the working
#: directory); ``gnomon doctor`` warns about a store found there.
LEGACY_DIR = Path(".gnomon")
#: Owner-only modes for what the data directory holds.
DIR_MODE = 0o700
FILE_MODE = 0o600


def data_dir() -> Path:
    """``$GNOMON_HOME`` if set, else the platform's user data directory for gnomon."""
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env)
    return Path(platformdirs.user_data_dir("gnomon", appauthor=False))


def store_file() -> Path:
    """The default store's SQLite file: ``data_dir()/gnomon.db``."""
    return data_dir() / "gnomon.db"


def demo_file() -> Path:
    """The demo's own SQLite file, apart from the default store: ``data_dir()/demo/demo.db``."""
    return data_dir() / "demo" / "demo.db"


def keys_dir() -> Path:
    """Where ``gnomon keys generate`` writes operator key pairs: ``data_dir()/keys``."""
    return data_dir() / "keys"


def trusted_keys_dir() -> Path:
    """The pinned operator public keys: ``data_dir()/trusted_keys``."""
    return data_dir() / "trusted_keys"


def private_dir(path: Path) -> Path:
    """Create ``path`` (and its parents) if needed and make it owner-only (0700); return it.

    >>> import tempfile
    >>> folder = private_dir(Path(tempfile.mkdtemp()) / "a" / "b")
    >>> oct(folder.stat().st_mode & 0o777)
    '0o700'
    """
    _make_dirs(path)
    path.chmod(DIR_MODE)
    return path


def _make_dirs(folder: Path) -> None:
    """Create ``folder`` and every missing parent owner-only (``Path.mkdir(parents=True)``
    would give the parents the umask's mode, e.g. the data directory 0755 under its demo/)."""
    if folder.exists():
        return
    _make_dirs(folder.parent)
    folder.mkdir(mode=DIR_MODE, exist_ok=True)


def private_file(path: Path) -> Path:
    """Create ``path`` empty if it is missing, never readable by others even for an instant,
    and make it owner-only (0600); folders it has to create are owner-only (0700), folders that
    exist are left as they are. Return it.

    SQLite gives a database's ``-wal`` and ``-shm`` files the mode of the database file, so a
    store file created this way keeps its companions private as well.

    >>> import tempfile
    >>> file = private_file(Path(tempfile.mkdtemp()) / "x" / "y" / "store.db")
    >>> oct(file.stat().st_mode & 0o777), oct(file.parent.stat().st_mode & 0o777)
    ('0o600', '0o700')
    >>> oct(file.parent.parent.stat().st_mode & 0o777)  # a parent it had to create, too
    '0o700'
    """
    _make_dirs(path.parent)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE))
    path.chmod(FILE_MODE)
    return path


__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "HOME_ENV",
    "LEGACY_DIR",
    "data_dir",
    "demo_file",
    "keys_dir",
    "private_dir",
    "private_file",
    "store_file",
    "trusted_keys_dir",
]
