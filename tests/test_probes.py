"""Every probe passes through the runner, and the runner reports (never raises) a broken probe."""

from __future__ import annotations

import types

import pytest

from gnomon.firewall.model.errors import InputError
from gnomon.probes import runner
from gnomon.probes.runner import Checks, ProbeResult, execute, run_all, run_one


@pytest.mark.parametrize("name", runner.PROBE_MODULES)
def test_probe_passes(name: str) -> None:
    result = run_one(name)
    assert isinstance(result, ProbeResult)
    assert result.name == name
    assert result.title
    assert result.passed, f"probe {name} failed: {result.detail}"
    assert result.duration_s >= 0


def test_probe_modules_describe_themselves() -> None:
    for name, module in runner.registry().items():
        doc = module.__doc__ or ""
        for heading in ("**Scenario.**", "**Asserts.**", "**Does not claim.**"):
            assert heading in doc, f"probe {name} docstring lacks {heading}"
        assert name == module.NAME


def test_run_all_runs_every_probe_in_order() -> None:
    results = run_all()
    assert [r.name for r in results] == list(runner.PROBE_MODULES)
    failed = {r.name: r.detail for r in results if not r.passed}
    assert not failed, failed


def test_run_all_on_a_shared_sqlite_store(tmp_path: object) -> None:
    # Probes write into projects of their own, so they can share one real store.
    url = f"sqlite:///{tmp_path}/shared.db"
    results = run_all(url) + run_all(url)
    failed = {r.name: r.detail for r in results if not r.passed}
    assert not failed, failed


def test_unknown_probe_name_is_an_input_error() -> None:
    with pytest.raises(InputError, match="unknown probe"):
        run_one("no_such_probe")


# -- a deliberately broken probe ----------------------------------------------------------------


def _broken_expectation(url: str, c: Checks) -> None:
    c.expect(True, "this one holds")
    one, two = 1, 2
    c.expect(one == two, "one equals two", got=one)


def _raises_unexpectedly(url: str, c: Checks) -> None:
    raise RuntimeError("the store caught fire")


def _wrong_error(url: str, c: Checks) -> None:
    c.raises(KeyError, "a KeyError is raised", int, "not a number")


def _no_error(url: str, c: Checks) -> None:
    c.raises(ValueError, "a ValueError is raised", int, "3")


def test_a_broken_expectation_is_a_failed_result_naming_it() -> None:
    result = execute("broken", "Broken", _broken_expectation, "memory://")
    assert result.passed is False
    assert "one equals two" in result.detail
    assert "got: 1" in result.detail
    assert "this one holds" in result.detail
    assert result.checks == ("this one holds",)


def test_a_passing_result_lists_the_expectations_that_held() -> None:
    result = run_one("sensitivity_ceiling")
    assert result.passed and result.checks
    assert result.detail == f"{len(result.checks)} expectation(s) held"


def test_an_unexpected_exception_is_a_failed_result_with_the_error() -> None:
    result = execute("fire", "Fire", _raises_unexpectedly, "memory://")
    assert result.passed is False
    assert "RuntimeError" in result.detail and "the store caught fire" in result.detail


def test_a_wrong_or_missing_error_is_a_broken_expectation() -> None:
    wrong = execute("wrong", "Wrong", _wrong_error, "memory://")
    assert wrong.passed is False and "expected KeyError, got ValueError" in wrong.detail
    missing = execute("none", "None", _no_error, "memory://")
    assert missing.passed is False and "nothing was raised" in missing.detail


def test_run_all_reports_a_broken_probe_module_without_raising(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    broken = types.ModuleType("gnomon.probes.broken")
    broken.NAME = "broken"  # type: ignore[attr-defined]
    broken.TITLE = "A probe whose run() itself raises"  # type: ignore[attr-defined]

    def run(url: str) -> ProbeResult:
        raise ZeroDivisionError("division by zero in the probe")

    broken.run = run  # type: ignore[attr-defined]
    real_load = runner.load

    def load(name: str) -> types.ModuleType:
        return broken if name == "broken" else real_load(name)

    monkeypatch.setattr(runner, "PROBE_MODULES", ("broken", "sensitivity_ceiling"))
    monkeypatch.setattr(runner, "load", load)
    results = run_all()
    assert [r.name for r in results] == ["broken", "sensitivity_ceiling"]
    assert results[0].passed is False
    assert "ZeroDivisionError" in results[0].detail
    assert results[1].passed is True


def test_a_probe_that_cannot_load_is_a_failed_result(monkeypatch: pytest.MonkeyPatch) -> None:
    def load(name: str) -> types.ModuleType:
        raise ImportError(f"cannot import probes.{name}")

    monkeypatch.setattr(runner, "load", load)
    result = run_one("sensitivity_ceiling")
    assert result.passed is False
    assert "ImportError" in result.detail
