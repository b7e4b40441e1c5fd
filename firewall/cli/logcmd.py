"""The audit trail's commands: ``log verify | checkpoint | export | import``, ``rebuild`` and
``otel export``.

Each parses its options, calls one library function (:mod:`firewall.log.checkpoints`,
:mod:`firewall.log.ndjson`, :mod:`firewall.audit.rebuild`, :mod:`firewall.host.otel`) and
renders the result.

``gnomon otel export`` needs no collector: spans are written with the SDK's console exporter to
a file or stdout (one span per line, the SDK's own JSON form). A team with a collector uses
:class:`firewall.host.otel.OtelSubscriber` or :func:`firewall.host.otel.export_events` with its own
exporter. Needs ``pip install 'gnomon[otel]'``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import click

from gnomon.firewall.audit.erasure_certificate import verify_certificate
from gnomon.firewall.audit.import_check import check_transitions
from gnomon.firewall.audit.rebuild import rebuild as rebuild_store
from gnomon.firewall.audit.shipping import (
    Shipment,
    file_seal_report,
    ship,
    ship_to_file,
    verify_file,
)
from gnomon.firewall.cli.common import (
    F,
    ceiling_option,
    console,
    echo,
    echo_json,
    json_option,
    path_option,
    resolve_trusted_keys,
    resolve_url,
    say,
    staged_file,
    url_option,
)
from gnomon.firewall.cli.common import with_progress as progress
from gnomon.firewall.gate.grants import load_public_key
from gnomon.firewall.host import config
from gnomon.firewall.log.checkpoints import (
    Checkpoint,
    CheckpointSigner,
    verify_log,
    write_checkpoint,
)
from gnomon.firewall.log.ndjson import export_to_file, read_events, read_file, write_export
from gnomon.firewall.log.seal import Auditor, SealReport
from gnomon.firewall.model.errors import GnomonError, InputError, TamperedLogError
from gnomon.firewall.model.states import Sensitivity
from gnomon.firewall.store.base import Store
from gnomon.firewall.store.registry import open_store


def _lookup(store: Store, seq: int) -> str | None:
    row = next(store.chain_rows(after=seq - 1), None)
    return row[3] if row is not None and row[0] == seq else None


def _check_seals(store: Store, seal_key: str | None) -> tuple[SealReport | None, str]:
    """The store's seals checked with the auditor's key (``seal_key``), else with the host's
    (when this process holds it), else not at all; and which key it was."""
    if seal_key is not None:
        return store.seal_report(Auditor.from_file(Path(seal_key))), "auditor's key"
    report = store.seal_report()
    return report, "host key" if report is not None else ""


def _open(ctx: click.Context, url: str | None, *, must_exist: bool = True) -> Store:
    return open_store(resolve_url(ctx, url, must_exist=must_exist))


def pinned_keys_option(help: str) -> Callable[[F], F]:
    """``--key PUBFILE`` (repeatable): the public keys checkpoints must be signed by."""
    return path_option("--key", "keys", multiple=True, metavar="PUBFILE", help=help)


@click.command("verify")
@url_option
@pinned_keys_option(
    "Pinned public key (.pub): every checkpoint must be signed by it, and at least one "
    "must exist. Repeat for several keys."
)
@path_option(
    "--checkpoint",
    "checkpoint_file",
    default=None,
    help="A checkpoint file kept away from the store: detects a truncated tail.",
)
@path_option(
    "--file",
    "export_file",
    default=None,
    help="Verify an NDJSON export (a shipped, redacted one included) instead of a store.",
)
@path_option(
    "--seal-key",
    "seal_key",
    default=None,
    help="The auditor's verification file (<key>.verify, written when the store's sealing key "
    "was created): check every event's forward-secure seal with it, in the store or in an "
    "export given with --file.",
)
@path_option(
    "--certificate",
    "certificate_file",
    default=None,
    help="An erasure certificate (`gnomon forget`): check its signature against the pinned "
    "operator keys and what it says against the store.",
)
@json_option
@click.pass_context
def log_verify(
    ctx: click.Context,
    url: str | None,
    keys: tuple[str, ...],
    checkpoint_file: str | None,
    export_file: str | None,
    seal_key: str | None,
    certificate_file: str | None,
    as_json: bool,
) -> None:
    """Verify every event's hash and link and every checkpoint; name the first bad seq (exit 1).
    Events of a shipped export that verified from their body's digest are counted as redacted.
    A store's seals are checked too: with the host's key when this process holds it, with the
    auditor's (``--seal-key``) otherwise; every unsealed or forged event is listed."""
    pinned = [load_public_key(k) for k in keys]
    if certificate_file is not None:
        _verify_certificate(ctx, url, certificate_file, pinned, as_json=as_json)
        return
    checkpoint = Checkpoint.read(checkpoint_file) if checkpoint_file else None
    seals: SealReport | None = None
    sealed_by = ""
    if export_file is not None:
        report = verify_file(export_file, keys=pinned, checkpoint=checkpoint)
        if seal_key is not None:  # the seals a whole export carries, as the auditor checks them
            seals = file_seal_report(export_file, Auditor.from_file(Path(seal_key)))
            sealed_by = "auditor's key"
    else:
        with _open(ctx, url) as store:
            total = store.head()[0]
            report = verify_log(
                progress(store.chain_rows(), total, "verifying"),
                keys=pinned,
                checkpoint=checkpoint,
                lookup=lambda seq: _lookup(store, seq),
                require_tail=True,
            )
            seals, sealed_by = _check_seals(store, seal_key)
    if as_json:
        doc = report.to_json()
        if seals is not None:
            doc["seals"] = {
                "checked_with": sealed_by,
                "events": seals.events,
                "bad_count": seals.bad_count,
                "bad": [{"seq": q, "problem": p} for q, p in seals.bad],
            }
        echo_json(doc)
        if not report.ok or (seals is not None and not seals.ok):
            ctx.exit(1)
        return
    report.raise_for_problem()
    if seals is not None and not seals.ok:
        for seq, problem in seals.bad:
            say(f"seq {seq}: {problem}")
        first_seq, first_problem = seals.bad[0]
        raise TamperedLogError(
            first_seq,
            f"{seals.bad_count} event(s) not sealed by the host (checked with the {sealed_by}"
            f"; the first {len(seals.bad)} listed above); the first: {first_problem}",
        )
    line = (
        f"ok: {report.events} events verified; head seq {report.head_seq} hash {report.head_hash}"
    )
    say(line)
    if seals is not None:
        say(f"sealed: all {seals.events} events' seals verify with the {sealed_by}")
    elif export_file is None:
        say(
            "unsealed check: this process holds no sealing key for the store; pass --seal-key "
            "with the auditor's verification file to check the seals"
        )
    if report.redacted:
        say(f"redacted: {report.redacted} event(s) verified from their body's digest only")
    if report.erased:
        say(
            f"erased: {report.erased} event(s) verified through the digest they keep, each "
            "vouched for by its erasure event"
        )
    if report.signatures_checked:
        unsigned = report.head_seq - (report.signed_through or 0)
        say(
            f"signed: checkpoints by the pinned key cover seq 1..{report.signed_through}"
            + (f"; the last {unsigned} events are not yet covered" if unsigned else "")
        )
    elif report.checkpoints:
        say(
            f"{report.checkpoints} checkpoint(s) match the chain; pass --key to check who "
            "signed them"
        )


def _verify_certificate(
    ctx: click.Context, url: str | None, path: str, keys: list[Any], *, as_json: bool
) -> None:
    """``log verify --certificate``: the pinned operator keys (and any ``--key``) check the
    signature, the store checks the rest (:mod:`firewall.audit.erasure_certificate`)."""
    pinned = keys or config.pinned_keys(resolve_trusted_keys(ctx, None))
    with _open(ctx, url) as store:
        cert = verify_certificate(read_file(path), pinned, store)
    if as_json:
        echo_json(
            {
                "ok": True,
                "erasure_seq": cert.erasure_seq,
                "grant_id": cert.grant_id,
                "events": len(cert.events),
                "beliefs": list(cert.beliefs),
            }
        )
        return
    say(
        f"ok: certificate of erasure {cert.erasure_seq} by grant {cert.grant_id} on "
        f"{cert.erased_on} verifies: signed by pinned key {cert.key_id}; {len(cert.events)} "
        f"erased event(s) still chained under their recorded digests; the log and its seals "
        "verify"
    )


@click.command("checkpoint")
@url_option
@path_option(
    "--key",
    "key_file",
    required=True,
    metavar="KEYFILE",
    help="Private key (from `gnomon keys generate`) that signs the checkpoint.",
)
@path_option(
    "--out",
    default=None,
    help="Also write the checkpoint to FILE (keep it away from the store).",
)
@json_option
@click.pass_context
def log_checkpoint(
    ctx: click.Context, url: str | None, key_file: str, out: str | None, as_json: bool
) -> None:
    """Sign the chain head, append it to the log, and optionally write it to a file.

    With ``--out``, the file is opened (beside FILE) before the checkpoint is appended: a place
    that cannot be written fails first, so a failed command appends nothing and leaves no
    partial file."""
    signer = CheckpointSigner.from_file(key_file)
    with _open(ctx, url) as store, staged_file(out) if out else nullcontext() as staged:
        checkpoint = write_checkpoint(store, signer, actor="cli")
        if staged is not None:
            staged.write(checkpoint.to_json() + b"\n")
    if as_json:
        echo_json(checkpoint.model_dump())
        return
    say(
        f"checkpoint: seq {checkpoint.seq} hash {checkpoint.head_hash} signed by key "
        f"{checkpoint.key_id}" + (f"; written to {out}" if out else "")
    )


@click.command("export")
@url_option
@path_option(
    "--out",
    default=None,
    help="Write to FILE (atomically) instead of standard output.",
)
@ceiling_option(
    "Ship the log: an event carrying records above LEVEL keeps only its body's digest, and so "
    "does, when the log holds any such record, every event carrying unlabelled free text "
    "(queries, arguments, reasons), and any event whose text holds a credential (the export "
    "still verifies with `gnomon log verify --file`, but cannot be imported).",
    default=None,
)
@json_option
@click.pass_context
def log_export(
    ctx: click.Context, url: str | None, out: str | None, ceiling: str | None, as_json: bool
) -> None:
    """Write the whole event log as NDJSON (the portable, verifiable format). With --out and
    --json, the summary is a JSON object on stdout; without --out, stdout is the NDJSON."""
    level = Sensitivity(ceiling) if ceiling is not None else None
    shipment: Shipment | None = None
    with _open(ctx, url) as store:
        if out and level is not None:
            shipment = ship_to_file(store.sealed_rows, out, level)
            count = shipment.events
        elif out:  # a whole export carries each event's seal, for an auditor
            count = export_to_file(store.sealed_rows(), out)
        else:
            if level is not None:
                ship(store.sealed_rows, sys.stdout.buffer, level)
            else:
                write_export(store.sealed_rows(), sys.stdout.buffer)
            sys.stdout.buffer.flush()
            return
    if as_json:
        summary: dict[str, object] = {"exported": count, "out": out}
        if shipment is not None:
            summary.update(
                redacted=shipment.redacted,
                reasons=dict(sorted(shipment.reasons.items())),
                sensitivity_ceiling=shipment.ceiling.value,
            )
        echo_json(summary)
    elif shipment is not None:
        why = ", ".join(f"{n} {reason}" for reason, n in sorted(shipment.reasons.items()))
        echo(
            f"shipped {count} events to {out}; {shipment.redacted} redacted at the "
            f"{shipment.ceiling.value} ceiling" + (f" ({why})" if why else ""),
            err=True,
        )
    else:
        echo(f"exported {count} events to {out}", err=True)


@click.group("otel")
def otel_group() -> None:
    """OpenTelemetry export of sessions, recalls, decisions, actions, holds and alerts."""


@otel_group.command("export")
@url_option
@path_option(
    "--out",
    default=None,
    help="Write the spans to FILE (one JSON object per line) instead of standard output.",
)
@ceiling_option("Belief text above LEVEL is exported as its content hash only.")
@json_option
@click.pass_context
def otel_export(
    ctx: click.Context, url: str | None, out: str | None, ceiling: str, as_json: bool
) -> None:
    """Export the whole log as spans (ids derived from the log: the same log gives the same
    ids). With --out and --json, the summary is a JSON object on stdout."""
    from gnomon.firewall.host.otel import JsonLinesExporter, export_events

    level = Sensitivity(ceiling)
    with open_store(resolve_url(ctx, url)) as store:
        if out is None:
            stdout = JsonLinesExporter(sys.stdout.buffer.write)
            count = export_events(store.events, stdout, ceiling=level)
            sys.stdout.buffer.flush()
            return
        with staged_file(out) as staged:
            count = export_events(store.events, JsonLinesExporter(staged.write), ceiling=level)
    if as_json:
        echo_json({"spans": count, "out": out, "sensitivity_ceiling": level.value})
    else:
        echo(f"exported {count} spans to {out} (belief text above {level.value} as hashes)")


@click.command("import")
@click.argument("file", type=click.Path(dir_okay=False))
@url_option
@pinned_keys_option("Refuse the file unless its checkpoints are signed by this pinned key.")
@json_option
@click.pass_context
def log_import(
    ctx: click.Context, file: str, url: str | None, keys: tuple[str, ...], as_json: bool
) -> None:
    """Verify an NDJSON log FILE completely, then append it to the store (all or nothing)."""
    pinned = [load_public_key(k) for k in keys]
    data = read_file(file)
    with _open(ctx, url, must_exist=False) as store:
        events = read_events(data, file, head=store.head())
        check_transitions(store, events, verified=bool(pinned))
        if pinned:
            rows = [(e.seq, e.body, e.prev_hash, e.hash) for e in store.events()]
            rows += [(e.seq, e.body, e.prev_hash, e.hash) for e in events]
            verify_log(rows, keys=pinned, require_tail=True).raise_for_problem()
        store.append_sealed(events)
        head = store.head()
    if as_json:
        echo_json({"imported": len(events), "head_seq": head[0], "head_hash": head[1]})
        return
    say(f"imported {len(events)} events from {file}; head seq {head[0]} hash {head[1]}")


@click.command("adopt")
@url_option
@pinned_keys_option(
    "The operator's public key: the log is adopted only if a checkpoint signed by it covers "
    "its last event (required; repeatable)."
)
@json_option
@click.pass_context
def log_adopt(ctx: click.Context, url: str | None, keys: tuple[str, ...], as_json: bool) -> None:
    """Seal a log written before sealing existed, so the host can act on it again.

    The whole chain is verified and must be covered by a checkpoint signed by a pinned
    operator key (``gnomon log checkpoint --key``, run where the log is trusted); an event
    whose seal is present but bad is refused (tampering, not age). A store without a sealing
    key gets one; its auditor's verification file is written beside it. Then every projection
    row is rebuilt from the adopted log and sealed."""
    if not keys:
        raise InputError(
            "gnomon log adopt needs --key PUBFILE: adopting says 'this log is mine', so a "
            "checkpoint signed by a pinned operator key must cover it",
            hint="sign one where the log is trusted (gnomon log checkpoint --key KEY), then "
            "gnomon log adopt --key PUBFILE",
        )
    pinned = [load_public_key(k) for k in keys]
    with _open(ctx, url) as store:
        adopted = store.adopt_unsealed(checkpoint_keys=pinned)
        head = store.head()
        key = store.seal_key_path
    verify = None if key is None else str(Path(key).with_suffix(".verify"))
    if as_json:
        echo_json({"adopted": adopted, "head_seq": head[0], "seal_key": key, "verify": verify})
        return
    say(f"adopted {adopted} unsealed events; every event up to seq {head[0]} is sealed")
    if key is not None:
        say(f"sealing key: {key}")
        if verify is not None and Path(verify).exists():
            say(f"auditor's verification file: {verify} (copy it off the host, then delete it)")


@click.command("rebuild")
@url_option
@click.option(
    "--apply",
    "apply_",
    is_flag=True,
    help="Replace the live projections by the ones rebuilt from the log (one transaction).",
)
@json_option
@click.pass_context
def rebuild(ctx: click.Context, url: str | None, apply_: bool, as_json: bool) -> None:
    """Rebuild every projection from the log and prove it equals the live state (exit 1 if not)."""
    with _open(ctx, url) as store:
        report = rebuild_store(store, apply=apply_)
    if as_json:
        echo_json(report.to_json())
        if not report.ok:
            ctx.exit(1)
        return
    out = console()
    rows = ", ".join(f"{table} {n}" for table, n in report.tables.items()) or "no records"
    say(f"replayed {report.events} events: {rows}")
    for diff in report.differences:
        say(f"  {diff.table} {diff.id}: {diff.problem}")
    if report.difference_count > len(report.differences):
        out.print(f"  … and {report.difference_count - len(report.differences)} more", markup=False)
    if report.applied:
        say(
            f"applied: live projections replaced from the log ({report.difference_count} "
            f"difference(s) before, {report.remaining} after)"
        )
    if not report.ok:
        by_table = ", ".join(f"{t}: {n}" for t, n in sorted(report.by_table.items()))
        raise GnomonError(
            f"the live projections differ from the log in {report.difference_count} "
            f"record(s) ({by_table})",
            hint="a projection row was changed without its event; `gnomon rebuild --apply` "
            "restores the state the log records",
        )
    if not report.applied:
        out.print("ok: the live projections equal the ones rebuilt from the log", markup=False)


__all__ = [
    "log_adopt",
    "log_checkpoint",
    "log_export",
    "log_import",
    "log_verify",
    "otel_group",
    "rebuild",
]
