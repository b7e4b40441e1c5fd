"""``open_store``: URL schemes to backends, and the errors for the ones we do not serve."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gnomon import firewall
from gnomon.firewall.model.errors import InputError, UnsupportedURLError
from gnomon.firewall.store.memory import MemoryStore
from gnomon.firewall.store.registry import default_url, open_store
from gnomon.firewall.store.sqlite import SQLiteStore


def test_memory() -> None:
    with open_store("memory://") as store:
        assert isinstance(store, MemoryStore)
        assert store.url == "memory://"


def test_sqlite_relative(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with open_store("sqlite:///./data/x.db") as store:
        assert isinstance(store, SQLiteStore)
        assert store.url == "sqlite:///./data/x.db"
    assert (tmp_path / "data" / "x.db").exists()
    with open_store("sqlite:///y.db"):
        pass
    assert (tmp_path / "y.db").exists()


def test_sqlite_absolute(tmp_path: Path) -> None:
    path = tmp_path / "abs" / "x.db"
    assert str(path).startswith("/")
    with open_store(f"sqlite:///{path}", busy_timeout=1.5) as store:
        assert isinstance(store, SQLiteStore)
        assert store.busy_timeout == 1.5
    assert path.exists()


def test_sqlite_in_memory() -> None:
    with open_store("sqlite:///:memory:") as store:
        assert isinstance(store, SQLiteStore)
        assert store.head()[0] == 0


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///", "sqlite://host/x.db"])
def test_sqlite_without_path(url: str) -> None:
    with pytest.raises(UnsupportedURLError, match="path"):
        open_store(url)


def test_postgres_without_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gnomon.firewall.store.postgres", None)
    with pytest.raises(UnsupportedURLError) as err:
        open_store("postgresql://gnomon:s3cret@db.example/gnomon")
    assert "pip install 'gnomon[postgres]'" in str(err.value)
    assert "s3cret" not in str(err.value)


@pytest.mark.parametrize("url", ["mysql://localhost/db", "redis://x", "./gnomon.db", ""])
def test_unknown_scheme_lists_supported(url: str) -> None:
    with pytest.raises(UnsupportedURLError) as err:
        open_store(url)
    for scheme in ("memory://", "sqlite:///", "postgresql://"):
        assert scheme in str(err.value)


def test_default_url(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("GNOMON_URL", raising=False)
    monkeypatch.setenv("GNOMON_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    # the user's data directory, absolute, never the working tree a coding agent edits
    assert default_url() == f"sqlite:///{tmp_path / 'home' / 'gnomon.db'}"
    monkeypatch.setenv("GNOMON_HOME", "rel")
    assert default_url() == f"sqlite:///{tmp_path / 'rel' / 'gnomon.db'}"
    monkeypatch.setenv("GNOMON_URL", "memory://")
    assert default_url() == "memory://"


@pytest.mark.parametrize(
    ("url", "option", "named"),
    [
        ("sqlite:///:memory:", {"busy_timout": 1.0}, "busy_timeout, cache_mb"),
        ("postgresql://127.0.0.1/test", {"pool": 3}, "pool_size"),
    ],
)
def test_an_option_the_backend_does_not_take_is_a_typed_error(
    url: str, option: dict[str, object], named: str
) -> None:
    """A misspelt option is named, with the ones the backend takes: never a raw TypeError from
    the backend's constructor (and never a connection opened first)."""
    with pytest.raises(InputError) as caught:
        open_store(url, **option)
    assert repr(next(iter(option))) in caught.value.message and named in str(caught.value.hint)


def test_trusted_keys_must_be_public_keys() -> None:
    with pytest.raises(InputError, match="trusted_keys holds str, not an Ed25519 public key"):
        firewall.open("memory://", trusted_keys=["-----BEGIN PUBLIC KEY-----"])
