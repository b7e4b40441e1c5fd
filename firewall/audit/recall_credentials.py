"""One credential rule for what a recall shows: the drop-in's rule, on the store's own recall.

A memory-store adapter withholds a hit it would quote when its text holds a credential
(:func:`firewall.audit.credentials.credential_kinds`), whatever its label says. The store's own
recall (``session.recall(...)``, so ``gnomon recall`` and ``gnomon mcp serve`` too) applies
the same scan with :func:`withhold_credentials`, called in one place
(:meth:`firewall.host.session.Session.recall`), before the recall is logged:

* a quoted belief whose statement or origin ids hold a credential is withheld: it becomes a
  rejection (reason ``security``, naming the kinds found, never the text);
* a contradicting belief the result would show is withheld the same way (its contradiction
  counts it as withheld);
* an "Uncertain" line whose subject or origin ids hold one is dropped (the line would print
  them);
* a rejection whose origin ids hold one shows :data:`WITHHELD_ORIGIN` instead (a rejection
  carries no text, but ``gnomon recall`` prints its origin).

Trusted facts (``accepted``) pass, as in the drop-in: the policy admitted them as the user's
or the host's word.
"""

from __future__ import annotations

from dataclasses import replace

from gnomon.firewall.audit.credentials import credential_kinds
from gnomon.firewall.gate.policy import Reason, ReasonCode
from gnomon.firewall.gate.recall import RecallResult, RejectedItem
from gnomon.firewall.model.chain import Belief
from gnomon.firewall.model.origin import Origin


def _found(*texts: str | None) -> tuple[str, ...]:
    kinds: set[str] = set()
    for text in texts:
        if text:
            kinds.update(credential_kinds(text))
    return tuple(sorted(kinds))


def _in_label(origin: Origin) -> list[str]:
    return sorted(origin.origin_ids)


def _held(belief: Belief) -> tuple[str, ...]:
    return _found(belief.statement, belief.subject, *_in_label(belief.origin))


def _reason(kinds: tuple[str, ...]) -> Reason:
    return Reason(
        code=ReasonCode.SECURITY,
        detail=f"holds a credential ({', '.join(kinds)}): withheld whatever its label says",
    )


#: The origin a rejection shows when its own origin ids hold a credential.
WITHHELD_ORIGIN = Origin.external("credential-withheld")


def _redacted(item: RejectedItem) -> RejectedItem:
    """A rejection explains itself by id, origin and reasons: an origin id holding a
    credential (a URL with its token, a file path) is shown as :data:`WITHHELD_ORIGIN`."""
    if not _found(*_in_label(item.origin)):
        return item
    return replace(item, origin=WITHHELD_ORIGIN)


def withhold_credentials(result: RecallResult) -> RecallResult:
    """``result`` without the quoted, contradicting and uncertain items that hold a
    credential (see the module docstring); the others as they were.

    >>> from gnomon.firewall.gate.recall import RecallResult
    >>> withhold_credentials(RecallResult("q", "default", "0" * 64)).quoted
    ()
    """
    rejected = [_redacted(r) for r in result.rejected]
    quoted = []
    for item in result.quoted:
        kinds = _held(item.belief)
        if kinds:
            withheld = RejectedItem(item.belief.id, (_reason(kinds),), item.belief.origin)
            rejected.append(_redacted(withheld))
        else:
            quoted.append(item)
    views = []
    for view in result.contradictions:
        keep, hidden = [], list(view.withheld)
        for belief in view.visible:
            if _held(belief):
                hidden.append(belief.id)
            else:
                keep.append(belief)
        views.append(replace(view, visible=tuple(keep), withheld=tuple(hidden)))
    uncertain = tuple(
        u for u in result.uncertainties if not _found(u.subject, *_in_label(u.origin))
    )
    return replace(
        result,
        quoted=tuple(quoted),
        rejected=tuple(rejected),
        contradictions=tuple(views),
        uncertainties=uncertain,
    )


__all__ = ["WITHHELD_ORIGIN", "withhold_credentials"]
