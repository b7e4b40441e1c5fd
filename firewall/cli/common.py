"""Plumbing every command shares: the error boundary, store options, output helpers.

Errors: every :class:`~firewall.errors.GnomonError` raised anywhere below the root group is
caught once, in :class:`GnomonGroup`, and printed as ``error: …`` / ``hint: …`` on stderr with
exit status 1. Usage errors (unknown option, bad choice) stay click's (exit status 2).

Output: what the CLI prints comes from memories, i.e. from callers. Every rich renderer goes
through :class:`SafeConsole` and every plain line through :func:`echo`, both of which strip
terminal escape sequences, carriage returns, bidi and zero-width characters
(:func:`firewall.render.terminal_text`), so a stored statement cannot rewrite the screen. JSON
output escapes them instead (``json.dumps`` with ``ensure_ascii``).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment

from firewall import config
from firewall.errors import GnomonError, InputError
from firewall.grants import Grant
from firewall.render import terminal_text

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


@dataclass
class Settings:
    """Root-level options, inherited by every command unless it repeats them."""

    url: str | None = None
    trusted_keys: str | None = None


class GnomonGroup(click.Group):
    """A click group that turns Gnomon errors into a two-line message and exit status 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GnomonError as exc:
            echo(f"error: {exc.message}", err=True, multiline=True)
            if exc.hint:
                echo(f"hint: {exc.hint}", err=True, multiline=True)
            ctx.exit(1)


def settings(ctx: click.Context) -> Settings:
    obj = ctx.find_root().obj
    return obj if isinstance(obj, Settings) else Settings()


def url_option(f: F) -> F:
    return click.option(
        "--url",
        default=None,
        metavar="URL",
        help="Store URL (default: $GNOMON_URL or sqlite:///./.gnomon/gnomon.db).",
    )(f)


def trusted_keys_option(f: F) -> F:
    return click.option(
        "--trusted-keys",
        "trusted_keys",
        default=None,
        metavar="DIR",
        help="Directory of pinned *.pub keys (default: $GNOMON_TRUSTED_KEYS or "
        "./.gnomon/trusted_keys).",
    )(f)


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")(f)


def resolve_url(ctx: click.Context, url: str | None, *, must_exist: bool = True) -> str:
    chosen = config.store_url(url or settings(ctx).url)
    if must_exist:
        config.require_existing_store(chosen)
    return chosen


def resolve_trusted_keys(ctx: click.Context, directory: str | None) -> Path:
    return config.trusted_keys_dir(directory or settings(ctx).trusted_keys)


class SafeConsole(Console):
    """A rich console that strips invisible and control characters from every text segment.

    Rich passes ESC, bidi and zero-width characters in table cells straight to the terminal;
    this filters the rendered segments (rich's own styling is added after, and its cursor
    controls are kept), so no renderer, present or future, can print them.
    """

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterator[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or not segment.text:
                yield segment
            else:
                yield Segment(terminal_text(segment.text, multiline=True), segment.style)


def console() -> Console:
    """Stdout console; wide enough that ids are never wrapped when not on a terminal."""
    wide = sys.stdout.isatty() or "COLUMNS" in os.environ
    return SafeConsole(soft_wrap=False, width=None if wide else 120)


def echo(text: str, *, err: bool = False, multiline: bool = False) -> None:
    """``click.echo`` for text that may carry caller strings: one line unless ``multiline``."""
    click.echo(terminal_text(text, multiline=multiline), err=err)


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))


def with_progress(rows: Iterable[T], total: int, description: str) -> Iterator[T]:
    """Yield ``rows``, drawing a progress bar on stderr when (and only when) it is a terminal."""
    if not sys.stderr.isatty() or total < 1:
        yield from rows
        return
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(description, total=total)
        for row in rows:
            yield row
            progress.advance(task)


def write_file(path: str, text: str) -> None:
    """Write ``text`` to ``path``, or a typed error saying why it could not be written."""
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(
            f"cannot write {path}: {exc.strerror or exc}",
            hint="choose a path in a directory you can write to",
        ) from exc


def read_grant(path: str) -> Grant:
    """A grant file written by ``gnomon keys grant``; its signature is checked where used."""
    from pydantic import ValidationError

    try:
        return Grant.model_validate_json(Path(path).read_bytes())
    except OSError as exc:
        raise InputError(f"cannot read grant file {path}: {exc.strerror or exc}") from exc
    except ValidationError as exc:
        raise InputError(
            f"{path} is not a grant file: {exc.errors()[0]['msg']}",
            hint="issue one with gnomon keys grant --key KEY --project P --store S --out FILE",
        ) from exc


__all__ = [
    "GnomonGroup",
    "SafeConsole",
    "Settings",
    "console",
    "echo",
    "echo_json",
    "json_option",
    "read_grant",
    "resolve_trusted_keys",
    "resolve_url",
    "settings",
    "trusted_keys_option",
    "url_option",
    "with_progress",
    "write_file",
]
