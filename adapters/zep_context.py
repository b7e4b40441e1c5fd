"""Zep's default context template, rendered from edges and nodes (no SDK needed).

Zep's ``thread.get_context`` and ``graph.get_context`` answer with one text blob built from
every relevant fact and entity. The guarded client never returns that blob: it rebuilds the same
template from the items that passed the ContextPolicy, so nothing excluded can leak into it. The
fake Zep server (``adapters.fakes.zep``) renders its blobs with the same function.

>>> print(render_context([{"fact": "Ada likes tea.", "valid_at": "2026-01-01"}], []))
FACTS and ENTITIES represent relevant context to the current conversation.
# These are the most relevant facts and their valid date ranges
# format: FACT (Date range: from - to)
<FACTS>
  - Ada likes tea. (2026-01-01 - present)
</FACTS>
# These are the most relevant entities
<ENTITIES>
<BLANKLINE>
</ENTITIES>
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

FACTS_HEADER = (
    "FACTS and ENTITIES represent relevant context to the current conversation.\n"
    "# These are the most relevant facts and their valid date ranges\n"
    "# format: FACT (Date range: from - to)\n"
)


def render_context(edges: Sequence[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]]) -> str:
    facts = "\n".join(
        f"  - {e.get('fact')} ({e.get('valid_at') or 'date unknown'} - "
        f"{e.get('invalid_at') or 'present'})"
        for e in edges
    )
    entities = "\n".join(f"  - {n.get('name')}: {n.get('summary') or ''}" for n in nodes)
    return (
        f"{FACTS_HEADER}<FACTS>\n{facts}\n</FACTS>\n"
        f"# These are the most relevant entities\n<ENTITIES>\n{entities}\n</ENTITIES>"
    )


__all__ = ["FACTS_HEADER", "render_context"]
