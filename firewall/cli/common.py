"""Plumbing every command shares: the error boundary, store options, output helpers.

Errors: every :class:`~firewall.model.errors.GnomonError` raised anywhere below the root group is
caught once, in :class:`GnomonGroup`, and printed as ``error: …`` / ``hint: …`` on stderr with
exit status 1; when the command was given ``--json``, the same error is also printed on stdout
as one JSON object (``{"error": {"type", "message", "hint"}, "exit_code": 1}``), so a script
that parses stdout always gets JSON. Usage errors (unknown option, bad choice) stay click's (exit
status 2).

Exit statuses, one meaning each (the README's command table lists them)::

    0  ok
    1  a GnomonError (bad input, not found, refused) or a check that failed (log verify, probes)
    2  usage: an unknown option, a missing argument, a bad choice (click)
    3  findings: ``gnomon sync`` found edits made around the firewall

Output: what the CLI prints comes from memories, i.e. from callers. Every rich renderer goes
through :class:`SafeConsole` and every plain line through :func:`echo`, both of which strip
terminal escape sequences, carriage returns, bidi and zero-width characters
(:func:`firewall.model.render.terminal_text`), so a stored statement cannot rewrite the screen. JSON
output escapes them instead (``json.dumps`` with ``ensure_ascii``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment

from gnomon.firewall.gate.grants import Grant
from gnomon.firewall.host import config
from gnomon.firewall.model.errors import GnomonError, InputError
from gnomon.firewall.model.render import terminal_text

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


@dataclass
class Settings:
    """Root-level options, inherited by every command unless it repeats them."""

    url: str | None = None
    trusted_keys: str | None = None
    #: set by ``--json`` on the command being run: errors are then also printed as JSON
    as_json: bool = False


#: Exit statuses (see the module docstring).
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_FINDINGS = 0, 1, 2, 3


def error_json(exc: GnomonError) -> dict[str, Any]:
    """The JSON form of a refused command, printed on stdout under ``--json``."""
    return {
        "error": {"type": type(exc).__name__, "message": exc.message, "hint": exc.hint},
        "exit_code": EXIT_ERROR,
    }


class GnomonGroup(click.Group):
    """A click group that turns Gnomon errors into a two-line message and exit status 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GnomonError as exc:
            if settings(ctx).as_json:
                echo_json(error_json(exc))
            echo(f"error: {exc.message}", err=True, multiline=True)
            if exc.hint:
                echo(f"hint: {exc.hint}", err=True, multiline=True)
            ctx.exit(EXIT_ERROR)


def settings(ctx: click.Context) -> Settings:
    root = ctx.find_root()
    if not isinstance(root.obj, Settings):
        root.obj = Settings()
    return root.obj


def url_option(f: F) -> F:
    return click.option(
        "--url",
        default=None,
        metavar="URL",
        help="Store URL (default: $GNOMON_URL, else gnomon.db in the user data directory).",
    )(f)


def path_option(*decls: str, help: str, metavar: str = "FILE", **attrs: Any) -> Callable[[F], F]:
    """An option naming one file (never a directory); ``attrs`` go to :func:`click.option`."""
    return click.option(
        *decls, metavar=metavar, type=click.Path(dir_okay=False), help=help, **attrs
    )


def trusted_keys_option(f: F) -> F:
    return click.option(
        "--trusted-keys",
        "trusted_keys",
        default=None,
        metavar="DIR",
        help="Directory of pinned *.pub keys (default: $GNOMON_TRUSTED_KEYS, "
        "else trusted_keys/ in the user data directory).",
    )(f)


def _json_seen(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    if value:
        settings(ctx).as_json = True
    return value


def ceiling_option(
    help: str, *, default: str | None = "internal", dest: str = "ceiling"
) -> Callable[[F], F]:
    """``--sensitivity-ceiling LEVEL``: one of the sensitivity levels, validated by click."""
    from gnomon.firewall.model.states import Sensitivity

    return click.option(
        "--sensitivity-ceiling",
        dest,
        default=default,
        show_default=default is not None,
        type=click.Choice([s.value for s in Sensitivity]),
        help=help,
    )


def json_option(f: F) -> F:
    """``--json``: every command has it; errors are then JSON on stdout too."""
    return click.option(
        "--json",
        "as_json",
        is_flag=True,
        callback=_json_seen,
        help="Print JSON instead of text (errors too: a JSON object on stdout, exit 1).",
    )(f)


def store_options(f: Callable[..., None]) -> Callable[..., None]:
    """The options of a command on one store: ``--url`` and ``--json``; ``f`` takes the click
    context, then its arguments (declare those above this decorator), ``url`` and ``as_json``."""
    return url_option(json_option(click.pass_context(f)))


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
    """Stdout console; wide enough that ids are never wrapped when not on a terminal. Strings are
    never read as rich markup (a table cell holding ``pip install 'gnomon[mem0]'`` or a stored
    ``[red]…`` prints as written); a renderer that wants markup passes ``markup=True``."""
    wide = sys.stdout.isatty() or "COLUMNS" in os.environ
    return SafeConsole(soft_wrap=False, width=None if wide else 120, markup=False)


def say(text: str) -> None:
    """Print ``text`` on stdout as it is: never read as rich markup, never wrapped."""
    console().print(text, markup=False, soft_wrap=True)


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


def _unwritable(path: str | Path, exc: OSError) -> InputError:
    return InputError(
        f"cannot write {path}: {exc.strerror or exc}",
        hint="choose a path in a directory you can write to",
    )


class StagedFile:
    """A file being written beside its target; it replaces the target only on commit."""

    def __init__(self, target: Path, handle: Any) -> None:
        self.target, self._handle = target, handle

    def write(self, data: bytes) -> None:
        try:
            self._handle.write(data)
        except OSError as exc:
            raise _unwritable(self.target, exc) from exc


@contextmanager
def staged_file(path: str | Path) -> Iterator[StagedFile]:
    """Open a temporary file beside ``path`` first (an unwritable place fails here, before the
    caller has done anything it cannot take back), then rename it onto ``path`` when the block
    ends without error; on error the temporary file is removed and ``path`` is untouched. The
    file is created with mode 0600 (an export is the store's text: private until shared).

    ``gnomon log checkpoint --out`` uses this so that a checkpoint that cannot be written is
    never appended to the log either.
    """
    target = Path(path)
    try:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise _unwritable(path, exc) from exc
    temporary = Path(name)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield StagedFile(target, handle)
            try:
                handle.flush()
                os.fsync(handle.fileno())
            except OSError as exc:
                raise _unwritable(path, exc) from exc
        try:
            os.replace(temporary, target)
        except OSError as exc:
            raise _unwritable(path, exc) from exc
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_file(path: str | Path, text: str | bytes) -> None:
    """Write ``text`` to ``path`` atomically (no partial file), or a typed error saying why it
    could not be written."""
    with staged_file(path) as staged:
        staged.write(text.encode("utf-8") if isinstance(text, str) else text)


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
    "EXIT_ERROR",
    "EXIT_FINDINGS",
    "EXIT_OK",
    "EXIT_USAGE",
    "GnomonGroup",
    "SafeConsole",
    "Settings",
    "StagedFile",
    "ceiling_option",
    "console",
    "echo",
    "echo_json",
    "error_json",
    "json_option",
    "read_grant",
    "resolve_trusted_keys",
    "resolve_url",
    "say",
    "settings",
    "staged_file",
    "store_options",
    "trusted_keys_option",
    "url_option",
    "with_progress",
    "write_file",
]
