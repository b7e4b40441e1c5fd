"""One tokenizer for recall, shared by every backend so that they agree on what matches.

Indexing keeps every word token; queries drop a short list of English stop words so that a query
such as "how do we deploy the service" does not match (and rank) every stored belief. A query is
the OR of its terms, ranked by BM25 (SQLite FTS5 and PostgreSQL do this natively; the memory
backend computes the same formula in Python).
"""

from __future__ import annotations

import functools
import re
import unicodedata

_WORD = re.compile(r"\w+", re.UNICODE)

STOP_WORDS = frozenset(
    """a an and are as at be but by do does for from has have how i if in is it its of on or our
    so than that the their then there these this to was we were what when where which who why
    will with you your""".split()
)

MAX_QUERY_TERMS = 32


def normalize(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def tokens(text: str) -> list[str]:
    """Index tokens: case-folded, diacritics removed, split on non-word characters."""
    return _WORD.findall(normalize(text))


def query_terms(query: str) -> list[str]:
    """Distinct query terms in order, without stop words (all of them if only stop words)."""
    words = tokens(query)
    kept = [w for w in words if w not in STOP_WORDS] or words
    seen: dict[str, None] = {}
    for word in kept:
        seen.setdefault(word, None)
    return list(seen)[:MAX_QUERY_TERMS]


@functools.lru_cache(maxsize=1024)
def fts5_match(query: str) -> str | None:
    """An FTS5 MATCH expression: the quoted terms OR'd together, or None if nothing to match.

    Cached by the query text (a pure function): one recall runs it for each of its queries."""
    terms = query_terms(query)
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
