"""The content signal: injection-like text. A signal only: it can raise suspicion (clean →
suspicious), it never confers trust; text that does not match is not thereby trusted."""

from __future__ import annotations

import re

INJECTION_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\bignore (all |any )?(previous|prior|above) (instructions|rules)",
        r"\b(assistant|system)\s*:",
        r"\byou (must|should) now\b",
        r"\b(forward|send|email|upload|exfiltrate)\b.{0,60}@[\w.-]+\.\w+",
        r"\bdisregard\b.{0,30}\b(instructions|policy|rules)\b",
    )
)


def looks_injected(text: str) -> str | None:
    """The first injection-like pattern ``text`` matches, or ``None``."""
    for pattern in INJECTION_PATTERNS:
        if pattern.search(text):
            return pattern.pattern
    return None


__all__ = ["INJECTION_PATTERNS", "looks_injected"]
