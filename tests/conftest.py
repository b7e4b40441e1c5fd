"""Shared fixtures. ``postgres_url``: a private schema on the test PostgreSQL server.

The server comes from ``GNOMON_TEST_POSTGRES_URL`` (default
``postgresql://postgres@127.0.0.1:5432/test``). Each test session (each xdist worker) creates its
own schema ``gnomon_test_<pid>_<random>`` in that database, points ``search_path`` at it through
the URL's ``options`` parameter, and drops it at the end, so runs never see each other's rows or
anyone else's tables. An unreachable server skips the PostgreSQL tests on a laptop and FAILS them
under ``CI=true``: CI must never pass by skipping them. The same holds for every other test:
under ``CI=true`` a skip of any kind (a missing extra's ``importorskip``, a missing MCP server)
is reported as a failure (:func:`pytest_runtest_makereport`).
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

# CrewAI is outside gnomon[all] (it pins mcp, openai and pydantic below the other extras), so its
# real-loop test is collected only where it is installed (its own CI job: .[dev,crewai]).
collect_ignore = [] if importlib.util.find_spec("crewai") else ["test_guard_crewai.py"]

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"

# mem0 reads these when it is first imported: no telemetry (it would try the network) and its
# config/history files in a temporary directory rather than ~/.mem0.
os.environ["MEM0_TELEMETRY"] = "false"
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="gnomon-mem0-"))
# Gnomon's own data directory (default store, sealing keys: firewall.store.paths) is a private
# temporary one, never the developer's real one.
os.environ["GNOMON_HOME"] = tempfile.mkdtemp(prefix="gnomon-home-")


@pytest.fixture(autouse=True)
def gnomon_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's own data directory (``$GNOMON_HOME``): the default store, the demo store and
    the keys one test writes are never another test's."""
    home = tmp_path_factory.mktemp("gnomon-home")
    monkeypatch.setenv("GNOMON_HOME", str(home))
    return home


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Under ``CI=true`` a skipped test fails: CI installs every extra, server and browser, so a
    skip there means something the suite promises was not checked."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") == "true" and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, where nothing may skip: {report.longrepr}"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"PostgreSQL tests cannot run under CI=true: {reason}", pytrace=False)
    pytest.skip(f"PostgreSQL tests skipped: {reason} (set GNOMON_TEST_POSTGRES_URL)")


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A URL whose ``search_path`` is a fresh schema, dropped when the session ends."""
    base = os.environ.get("GNOMON_TEST_POSTGRES_URL") or DEFAULT_POSTGRES_URL
    try:
        import psycopg
    except ImportError:
        _unavailable("psycopg is not installed (pip install -e '.[dev,postgres]')")
        raise AssertionError("unreachable") from None
    name = f"gnomon_test_{os.getpid()}_{secrets.token_hex(4)}"
    try:
        with psycopg.connect(base, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'CREATE SCHEMA "{name}"')
    except psycopg.Error as exc:
        _unavailable(f"cannot use {base.rsplit('@', 1)[-1]}: {str(exc).strip().splitlines()[0]}")
    separator = "&" if "?" in base else "?"
    url = f"{base}{separator}options={quote(f'-csearch_path={name}', safe='')}"
    try:
        yield url
    finally:
        with psycopg.connect(base, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
