"""Run the probes: each one is a small attack scenario with explicit expectations.

A probe module exposes ``NAME``, ``TITLE``, optionally ``STORE = "sqlite"`` (it needs a file that
several processes can open), a ``check(url, c)`` function that drives a firewall opened on
``url`` and states its expectations through ``c`` (a :class:`Checks`), and
``run(url) -> ProbeResult``, which is :func:`execute` applied to that check.

A probe never raises: a broken expectation becomes ``passed=False`` with a detail naming the
expectation, and an unexpected exception becomes ``passed=False`` with the error text. That way
``gnomon probes run`` can always print a full table, and a regression in one mechanism cannot hide
the results of the others.

>>> from gnomon.probes.runner import run_one
>>> result = run_one("sensitivity_ceiling")
>>> result.passed, result.name
(True, 'sensitivity_ceiling')
"""

from __future__ import annotations

import importlib
import os
import tempfile
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from gnomon.firewall.model.errors import InputError

#: Probe modules, in the order they run and are reported.
PROBE_MODULES: tuple[str, ...] = (
    "auto_observation_gate",
    "no_self_promotion",
    "quarantine_not_retrievable",
    "sensitivity_ceiling",
    "contradiction_routing",
    "contradiction_fairness",
    "laundering_summarization",
    "laundering_tool_echo",
    "laundering_corroboration",
    "cross_session_sqlite",
    "log_canonical_hash",
    "tamper_edited_byte",
    "tamper_deleted_event",
    "tamper_truncated_tail",
    "tamper_reordered",
    "tamper_spliced_segment",
    "tamper_whole_log_rewrite",
    "checkpoint_unforgeable",
    "rebuild_equals_live",
    "replay_stricter_policy",
    "time_travel",
    "adapter_bypass",
    "adapter_sync_drift",
    "adapter_contradiction_channel",
    "zep_context_leak",
    "mem0_infer_join",
    "extracted_tier",
    "action_ladder",
    "action_policy_signed",
    "action_two_phase",
    "approval_forgeries",
    "approval_timeout",
    "action_context_ids",
    "action_dataflow",
    "sidecar_boundary",
    "sentinel_quarantine",
    "sentinel_authority",
    "sentinel_arbiter",
    "decay_stale_context",
    "calibration_escalates",
    "shipped_export",
    "otel_ceiling",
    "harvest_candidates",
)

DEFAULT_URL = "memory://"

E = TypeVar("E", bound=BaseException)


@dataclass(frozen=True, slots=True)
class ProbeResult:
    name: str
    title: str
    passed: bool
    detail: str
    duration_s: float
    #: The expectations that held, in order (on failure: those that held before the break).
    checks: tuple[str, ...] = ()
    #: Set when the probe could not run because an optional extra is missing: the command that
    #: installs it. A skipped probe is neither held nor failed (a failure means an attack got
    #: through).
    skipped: str | None = None


#: The extra that installs each optional top-level module a probe may need.
EXTRAS = {
    "mem0": "mem0",
    "letta_client": "letta",
    "zep_cloud": "zep",
    "zep_python": "zep-legacy",
    "psycopg": "postgres",
    "psycopg_pool": "postgres",
    "langchain_core": "langchain",
    "langgraph": "langchain",
    "agents": "openai-agents",
    "pydantic_ai": "pydantic-ai",
    "mcp": "mcp",
    "opentelemetry": "otel",
}


class ProbeSkipped(Exception):
    """Raised by a probe that cannot run without an optional extra; names its install command."""

    def __init__(self, command: str) -> None:
        super().__init__(command)
        self.command = command


def install_command(exc: BaseException) -> str | None:
    """The ``pip install 'gnomon[extra]'`` command that would have let ``exc`` not happen: a
    :class:`ProbeSkipped`, an adapter's ``MissingSDKError``, or an ``ImportError`` of a module
    an extra provides, anywhere in ``exc``'s chain of causes. ``None`` for anything else.

    >>> install_command(ModuleNotFoundError("no", name="opentelemetry.sdk"))
    "pip install 'gnomon[otel]'"
    >>> install_command(ValueError("x")) is None
    True
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ProbeSkipped):
            return current.command
        if isinstance(current, ImportError):
            command = getattr(current, "command", None)
            if isinstance(command, str):
                return command
            extra = EXTRAS.get((current.name or "").split(".")[0])
            if extra is not None:
                return f"pip install 'gnomon[{extra}]'"
        current = current.__cause__ or current.__context__
    return None


def skipped(name: str, title: str, exc: BaseException, elapsed: float) -> ProbeResult | None:
    """The result of a probe stopped by a missing extra, or ``None`` if ``exc`` is anything
    else. Under ``CI=true`` (every extra installed) a missing extra is a failure, not a skip."""
    command = install_command(exc)
    if command is None:
        return None
    if os.environ.get("CI") == "true":
        return ProbeResult(
            name, title, False, f"needs an extra CI must install: {command}", elapsed
        )
    return ProbeResult(
        name, title, False, f"skipped: needs an optional extra ({command})", elapsed, (), command
    )


class ProbeFailure(AssertionError):
    """An expectation of a probe did not hold. Caught by :func:`execute`, never escapes it."""


@dataclass
class Checks:
    """Records the expectations a probe states; the first one that breaks ends the probe."""

    held: list[str] = field(default_factory=list)

    def expect(self, condition: object, expectation: str, *, got: object = None) -> None:
        """``expectation`` says what must be true, e.g. "external content is unverified"."""
        if not condition:
            seen = "" if got is None else f" (got: {got!r})"
            raise ProbeFailure(f"{expectation}{seen}")
        self.held.append(expectation)

    def raises(
        self, error: type[E], expectation: str, call: Callable[..., Any], *args: Any, **kw: Any
    ) -> E:
        """Expect ``call(*args, **kw)`` to raise ``error``; return it for further checks."""
        try:
            call(*args, **kw)
        except error as exc:
            self.held.append(expectation)
            return exc
        except Exception as exc:
            raise ProbeFailure(
                f"{expectation}: expected {error.__name__}, got {type(exc).__name__}: {exc}"
            ) from exc
        raise ProbeFailure(f"{expectation}: expected {error.__name__}, nothing was raised")


def execute(name: str, title: str, check: Callable[[str, Checks], None], url: str) -> ProbeResult:
    """Run one probe's ``check`` and turn whatever happens into a :class:`ProbeResult`."""
    checks = Checks()
    started = time.perf_counter()
    try:
        check(url, checks)
    except Exception as exc:
        missing = skipped(name, title, exc, time.perf_counter() - started)
        if missing is not None:
            return missing
        return _failed(name, title, exc, checks, started)
    elapsed = time.perf_counter() - started
    detail = f"{len(checks.held)} expectation(s) held"
    return ProbeResult(name, title, True, detail, elapsed, tuple(checks.held))


def _failed(name: str, title: str, exc: Exception, checks: Checks, started: float) -> ProbeResult:
    """The result of a probe whose expectation broke (or that raised)."""
    if isinstance(exc, ProbeFailure):
        detail = f"expectation broke: {exc}"
        if checks.held:
            detail += f" (after {len(checks.held)} held; last: {checks.held[-1]})"
    else:
        where = traceback.extract_tb(exc.__traceback__)[-1]
        detail = (
            f"unexpected {type(exc).__name__}: {exc} "
            f"(at {Path(where.filename).name}:{where.lineno}, after {len(checks.held)} "
            "expectation(s) held)"
        )
    elapsed = time.perf_counter() - started
    return ProbeResult(name, title, False, detail, elapsed, tuple(checks.held))


# -- helpers shared by probes ----------------------------------------------------------------


def project_for(name: str) -> str:
    """A project of the probe's own, so probes never read each other's (or a team's) memories."""
    return f"probe-{name}-{uuid.uuid4().hex[:12]}"


class ProbeClock:
    """A clock the probe moves by hand (``firewall.open(url, clock=clock)``)."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta) -> None:
        self.now += delta


# -- registry --------------------------------------------------------------------------------


def load(name: str) -> ModuleType:
    """Import one probe module by name."""
    if name not in PROBE_MODULES:
        raise InputError(
            f"unknown probe {name!r}", hint=f"known probes: {', '.join(PROBE_MODULES)}"
        )
    return importlib.import_module(f"gnomon.probes.{name}")


def registry() -> dict[str, ModuleType]:
    """Probe name → module, in run order (imports every probe module)."""
    return {name: load(name) for name in PROBE_MODULES}


def names() -> list[str]:
    return list(PROBE_MODULES)


def run_module(module: ModuleType, url: str | None = None) -> ProbeResult:
    """Run a loaded probe module, choosing its store; never raises."""
    name = getattr(module, "NAME", getattr(module, "__name__", "?"))
    title = getattr(module, "TITLE", "")
    started = time.perf_counter()
    try:
        if getattr(module, "STORE", "memory") == "sqlite":
            # Several processes must open the same store: always a fresh temporary file.
            with tempfile.TemporaryDirectory(prefix="gnomon-probe-") as folder:
                result: ProbeResult = module.run(f"sqlite:///{Path(folder) / 'gnomon.db'}")
        else:
            result = module.run(url or DEFAULT_URL)
    except Exception as exc:
        missing = skipped(name, title, exc, time.perf_counter() - started)
        if missing is not None:
            return missing
        return ProbeResult(
            name,
            title,
            False,
            f"probe module raised {type(exc).__name__}: {exc}",
            time.perf_counter() - started,
        )
    return result


def _run_name(name: str, url: str | None) -> ProbeResult:
    try:
        module = load(name)
    except InputError:
        raise
    except Exception as exc:
        missing = skipped(name, "", exc, 0.0)
        if missing is not None:
            return missing
        return ProbeResult(name, "", False, f"cannot load probe: {type(exc).__name__}: {exc}", 0.0)
    return run_module(module, url)


def run_one(name: str, url: str | None = None) -> ProbeResult:
    """Run one probe by name. ``url`` defaults to a fresh ``memory://`` store.

    Probes write into a project of their own (``probe-<name>-<id>``), so running them against a
    real store (``url=default_url()``) does not mix with a team's memories.
    An unknown name raises :class:`~firewall.model.errors.InputError`; anything else is a result.
    """
    return _run_name(name, url)


def run_all(url: str | None = None) -> list[ProbeResult]:
    """Run every probe, each on a fresh ``memory://`` store unless ``url`` is given
    (``cross_session_sqlite`` always uses its own temporary SQLite file)."""
    return [_run_name(name, url) for name in PROBE_MODULES]


__all__ = [
    "DEFAULT_URL",
    "EXTRAS",
    "PROBE_MODULES",
    "Checks",
    "ProbeClock",
    "ProbeFailure",
    "ProbeResult",
    "ProbeSkipped",
    "execute",
    "install_command",
    "load",
    "names",
    "project_for",
    "registry",
    "run_all",
    "run_module",
    "run_one",
    "skipped",
]
