"""Credentials in text, found with a maintained secret scanner, offline.

The trust report shows what a session read and wrote. A label says how sensitive a text is, but
labels are set by whoever wrote the text: a live key pasted into a note labelled ``internal``
would be printed in clear. :func:`credential_kinds` looks at the text itself, so the report can
redact it whatever its label says (:mod:`firewall.audit.report`).

**Scanner.** Yelp's ``detect-secrets`` (a dependency of the report), through its plugin API:
every detector it ships (AWS, GitHub, GitLab, Slack, Stripe, OpenAI, JWT, private keys, basic-auth
URLs, keyword assignments, high-entropy quoted strings, …) except ``IPPublicDetector`` (an IP
address is not a credential), called with ``plugin.analyze_string(line)``. That call does only
regular-expression and entropy work: it never reads detect-secrets' global settings, never loads
a baseline and never runs the plugins' ``verify`` (which would send the secret to its issuer), so
scanning is offline and the same in every process. detect-secrets' false-positive heuristics for
sequential strings, UUIDs and templates (``${X}``, ``<X>``) are applied to each match, and the
entropy plugins' limits (4.5 bits for base64, 3.0 for hex) to their quoted strings.

**Gnomon's patterns.** :data:`PATTERNS`, applied always: two shapes detect-secrets 1.5 does not
flag on a line of prose, a secret-looking name assigned a value (``ADMIN_TOKEN = "…"``,
``token: …``) and ``sk-live-…``/``sk-proj-…`` style keys with hyphens; and :data:`PREFIXED`,
issued keys by their well-known prefix at lengths below detect-secrets' own patterns.

**Fallback.** If detect-secrets cannot be imported (a trimmed install), :data:`FALLBACK`, a small
documented regex set for the most common issued keys, is used with :data:`PATTERNS`, and
:data:`ENGINE` says so (the report prints it).

>>> credential_kinds("hard-code ADMIN_TOKEN = 'sk-live-4f9a1c0ffee' in config")
('assigned secret', 'hyphenated API key')
>>> "AWS Access Key" in credential_kinds("creds AKIAIOSFODNN7EXAMPLE for prod")
True
>>> credential_kinds("We deploy on Fridays.")
()
>>> [credential_kinds(k) for k in ("sk-live-123", "sk_live_123", "ghp_abc123", "xoxb-1234")]
[('hyphenated API key',), ('Stripe Access Key',), ('GitHub Token',), ('Slack Token',)]
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import Any

from gnomon.firewall.model.render import shown_text

#: Issued keys by their well-known prefix, at any length past a short minimum: detect-secrets
#: matches these shapes only at their full issued length (or above its entropy limits), so a
#: short or truncated key (``sk_live_123``, ``ghp_abc12345``, ``xoxb-1234-abcd``) went
#: unflagged. The prefix is what makes them credentials; the minimum keeps a bare prefix named
#: in prose (``the ghp_ prefix``) from counting. Kinds use detect-secrets' names.
PREFIXED: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("AWS Access Key", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{8,}\b")),
    ("GitHub Token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{6,}|github_pat_\w{6,})")),
    ("GitLab Token", re.compile(r"\bglpat-[\w-]{6,}")),
    ("Slack Token", re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{4,}")),
    ("Stripe Access Key", re.compile(r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{3,}")),
    ("Google API Key", re.compile(r"\bAIza[\w-]{10,}")),
)

#: Gnomon's own patterns, applied with either engine: ``(kind, pattern)``.
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "assigned secret",
        re.compile(
            r"(?i)\b[\w.-]*(?:token|secret|passw(?:or)?d|passwd|api[_-]?key|access[_-]?key"
            r"|private[_-]?key|credentials?)\b[\"']?\s*[:=]\s*[\"']?[^\s\"',;${<][^\s\"',;]{5,}"
        ),
    ),
    ("hyphenated API key", re.compile(r"\b(?:sk|pk|rk)-(?:live|test|proj|ant)-[\w-]{3,}")),
    *PREFIXED,
)

#: Used only when detect-secrets is not importable: the issued keys :data:`PREFIXED` does not
#: cover.
FALLBACK: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("Private Key", re.compile(r"BEGIN (?:[A-Z]+ )?PRIVATE KEY")),
    ("JSON Web Token", re.compile(r"\beyJ[\w-]+\.eyJ[\w-]+\.[\w-]*")),
    ("Basic Auth Credentials", re.compile(r"://[^:/?#\s]+:[^@/\s]+@")),
)

_SKIPPED_PLUGINS = frozenset({"IPPublicDetector"})

Detector = tuple[str, Callable[[str], Iterable[str]]]


def _matches(pattern: re.Pattern[str]) -> Callable[[str], Iterable[str]]:
    return lambda line: [m.group(0) for m in pattern.finditer(line)]


@lru_cache(maxsize=1)
def _engine() -> tuple[str, tuple[Detector, ...]]:
    try:
        from importlib.metadata import version

        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.filters import heuristic
    except ImportError:
        fallback = tuple((kind, _matches(pattern)) for kind, pattern in FALLBACK)
        return "regex fallback (detect-secrets is not installed)", fallback

    false_positive = (
        heuristic.is_sequential_string,
        heuristic.is_potential_uuid,
        heuristic.is_templated_secret,
    )

    def scanner(plugin: Any) -> Callable[[str], Iterable[str]]:
        analyze: Callable[[str], Iterable[str]] = plugin.analyze_string
        # the entropy plugins yield every quoted string and check entropy in analyze_line,
        # which also reads global settings (and may verify): apply the limit here instead
        limit: float | None = getattr(plugin, "entropy_limit", None)

        def found(line: str) -> Iterable[str]:
            return [
                m
                for m in analyze(line)
                if not any(f(m) for f in false_positive)
                and (limit is None or plugin.calculate_shannon_entropy(m) > limit)
            ]

        return found

    plugins: list[Any] = list(get_mapping_from_secret_type_to_class().values())
    detectors: tuple[Detector, ...] = tuple(
        (str(cls.secret_type), scanner(cls()))
        for cls in plugins
        if cls.__name__ not in _SKIPPED_PLUGINS
    )
    return f"detect-secrets {version('detect-secrets')}", detectors


def engine() -> str:
    """Which scanner runs here: ``detect-secrets X.Y.Z`` or the regex fallback."""
    return _engine()[0]


def credential_kinds(text: str) -> tuple[str, ...]:
    """The kinds of credential found in ``text`` (detector names, sorted), or ``()``: in the
    text as stored and as it is shown (:func:`firewall.model.render.shown_text`), so a key split by
    a
    zero-width character or spelled in full-width letters, which a renderer puts back
    together, is found too.

    >>> credential_kinds("token ghp_\u200bA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8")
    ('GitHub Token',)
    """
    kinds = set(_kinds(text))
    shown = shown_text(text)
    if shown != text:
        kinds.update(_kinds(shown))
    return tuple(sorted(kinds))


@lru_cache(maxsize=16384)
def credential_kinds_memo(text: str) -> tuple[str, ...]:
    """:func:`credential_kinds`, remembered for the last texts scanned: a log repeats a record's
    text in every event that carries a new version of it (a shipped export scans them all)."""
    return credential_kinds(text)


def _found(text: str) -> list[tuple[str, str]]:
    """``(kind, matched text)`` for every credential found in ``text`` as stored."""
    found = [(kind, m.group(0)) for kind, pattern in PATTERNS for m in pattern.finditer(text)]
    for line in text.splitlines():
        if line.strip():
            found.extend((kind, match) for kind, detect in _engine()[1] for match in detect(line))
    return found


@lru_cache(maxsize=16384)
def masked(text: str) -> str:
    """``text`` with every credential in it replaced by ``[redacted: credential (<kind>)]``:
    the one credential rule for text a surface prints beside structure it must keep (an id, an
    origin, a tool name, an argument, a reason), called once per surface (``gnomon why``, the
    trust report, ``gnomon holds``; OTel and a shipped export redact whole strings). Where a
    credential is found only as the text is shown (split by a zero-width character) or is
    still found once the matches are masked, the whole text is redacted to its hash.

    >>> masked("origin external:web:https://x.example/?k=sk-live-4f9a1c0ffee (a page)")
    'origin external:web:https://x.example/?k=[redacted: credential (hyphenated API key)] (a page)'
    >>> masked("We deploy on Fridays.")
    'We deploy on Fridays.'
    """
    if not credential_kinds_memo(text):
        return text
    out = text
    for kind, match in sorted(_found(text), key=lambda f: -len(f[1])):
        if match and match in out:
            out = out.replace(match, f"[redacted: credential ({kind})]")
    left = credential_kinds(out)
    if left:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        return f"[redacted: credential ({', '.join(left)})] sha256:{digest}"
    return out


def masked_tree(value: Any) -> Any:
    """Every string in a JSON-like ``value`` (mapping keys included) through :func:`masked`:
    the one call for a surface that prints a document (``gnomon why --json``)."""
    if isinstance(value, str):
        return masked(value)
    if isinstance(value, Mapping):
        return {masked_tree(k): masked_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [masked_tree(v) for v in value]
    return value


def _kinds(text: str) -> set[str]:
    kinds: set[str] = set()
    for kind, pattern in PATTERNS:
        if pattern.search(text):
            kinds.add(kind)
    detectors = _engine()[1]
    for line in text.splitlines():
        if not line.strip():
            continue
        for kind, detect in detectors:
            if kind not in kinds and any(True for _ in detect(line)):
                kinds.add(kind)
    return kinds


__all__ = [
    "FALLBACK",
    "PATTERNS",
    "PREFIXED",
    "credential_kinds",
    "credential_kinds_memo",
    "engine",
    "masked",
    "masked_tree",
]
