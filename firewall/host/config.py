"""Where the command line finds its store and its pinned operator keys.

Everything has one default, one environment variable and one flag, in that order of precedence
reversed (the flag wins)::

    store URL      --url            $GNOMON_URL            sqlite:///DATA/gnomon.db
    pinned keys    --trusted-keys   $GNOMON_TRUSTED_KEYS   DATA/trusted_keys/*.pub
    key pairs      --dir                                   DATA/keys/
    demo store     demo --url                              sqlite:///DATA/demo/demo.db

``DATA`` is the user's data directory (:func:`~firewall.store.paths.data_dir`: ``$GNOMON_HOME``,
else ``~/.local/share/gnomon`` on Linux), never the working tree a coding agent edits. A store at
the old default ``./.gnomon/gnomon.db`` keeps working when named with ``--url``;
``gnomon doctor`` points it out.

A *pinned* key is a public key the operator decided to trust: grants signed by any other key are
refused as forged. ``gnomon keys generate`` writes a key pair and pins its public half.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from gnomon.firewall.gate.grants import load_public_key
from gnomon.firewall.model.errors import KeyFileError, StoreError
from gnomon.firewall.store import paths
from gnomon.firewall.store.registry import default_url, sqlite_url
from gnomon.firewall.store.sealing import file_identity, forget_keys


def demo_url() -> str:
    """The demo's own store, in the data directory and apart from the default store."""
    return sqlite_url(paths.demo_file())


def store_url(explicit: str | None = None) -> str:
    """The flag if given, else ``$GNOMON_URL``, else the embedded SQLite default."""
    return explicit or default_url()


def sqlite_path(url: str) -> Path | None:
    """The file a ``sqlite:///`` URL names, ``None`` for other schemes and ``:memory:``."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() != "sqlite" or not rest.startswith("/") or len(rest) < 2:
        return None
    path = rest[1:]
    return None if path == ":memory:" else Path(path)


def require_existing_store(url: str) -> None:
    """Refuse to open (and so silently create) a SQLite file that is not there yet.

    Reading commands on a mistyped path would otherwise show an empty, brand new store.
    """
    path = sqlite_path(url)
    if path is not None and not path.exists():
        raise StoreError(
            f"no Gnomon store at {path} ({url})",
            hint="run `gnomon init` to create it (`gnomon demo` writes its own demo store), or "
            "point --url / $GNOMON_URL at an existing store",
        )


def trusted_keys_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The flag if given, else ``$GNOMON_TRUSTED_KEYS``, else ``DATA/trusted_keys``."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("GNOMON_TRUSTED_KEYS")
    return Path(env) if env else paths.trusted_keys_dir()


def pinned_keys(directory: Path) -> list[Ed25519PublicKey]:
    """Every ``*.pub`` in ``directory``; an error telling the user how to pin one if none.

    Fails closed: a privileged command never falls back to an unpinned (ephemeral) key.
    """
    files = sorted(directory.glob("*.pub")) if directory.is_dir() else []
    if not files:
        raise KeyFileError(
            f"no pinned operator keys in {directory}",
            hint="run `gnomon keys generate` to create a key pair and pin its public key "
            "(or pass --trusted-keys DIR / set $GNOMON_TRUSTED_KEYS)",
        )
    return [load_public_key(f) for f in files]


def pin_key(public_key_file: Path, directory: Path) -> Path:
    """Copy ``public_key_file`` into the trusted-keys directory; return the pinned path."""
    load_public_key(public_key_file)  # never pin something that is not a public key
    target = directory / public_key_file.name
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=paths.DIR_MODE)
        if target.resolve() == public_key_file.resolve():
            return target
        if target.exists():
            if target.read_bytes() == public_key_file.read_bytes():
                return target
            raise KeyFileError(
                f"{target} is already pinned with a different key",
                hint="choose another --name, or remove the old pinned key deliberately",
            )
        shutil.copyfile(public_key_file, target)
        target.chmod(paths.FILE_MODE)  # a pinned key the agent could rewrite would pin its own
    except OSError as exc:
        raise KeyFileError(
            f"cannot pin {public_key_file} into {directory}: {exc.strerror or exc}",
            hint="check the directory's permissions",
        ) from exc
    return target


def reset_sqlite_file(url: str) -> None:
    """Delete a SQLite store file, its WAL/SHM companions and its sealing key (used for the
    demo store only: a new demo store is a new store, not a truncated one)."""
    path = sqlite_path(url)
    if path is None:
        return
    forget_keys(file_identity(path))
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            candidate.unlink(missing_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot remove the old demo store {candidate}: {exc.strerror or exc}",
                hint="remove it by hand or pass another --url",
            ) from exc


__all__ = [
    "demo_url",
    "pin_key",
    "pinned_keys",
    "require_existing_store",
    "reset_sqlite_file",
    "sqlite_path",
    "store_url",
    "trusted_keys_dir",
]
