"""Values every backend derives from a record the same way: time keys and index tokens.

Times are compared as integer microseconds since the epoch (exact, timezone-proof, and cheap to
index); statements are indexed as :func:`firewall.model.text.tokens` produces them, with a fast path
for ASCII text (where NFKD is the identity and ``casefold`` is ``lower``) because tokenizing is
on the ingest hot path.

>>> index_tokens("Deploys go through ArgoCD")
['deploys', 'go', 'through', 'argocd']
>>> index_tokens("Le CAFÉ") == ["le", "cafe"]
True
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from gnomon.firewall.model.text import tokens

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_ASCII_WORD = re.compile(r"\w+")


def micros(moment: datetime) -> int:
    """Exact integer microseconds since the epoch of an aware datetime."""
    return (moment - _EPOCH) // _MICROSECOND


def index_tokens(statement: str) -> list[str]:
    """Exactly ``firewall.model.text.tokens(statement)``, faster for ASCII text."""
    if statement.isascii():
        return _ASCII_WORD.findall(statement.lower())
    return tokens(statement)


__all__ = ["index_tokens", "micros"]
