"""Test doubles shipped with the package: run mem0's real ``Memory`` offline, deterministically.

* :class:`HashEmbedder`: a hashed bag-of-words embedder with mem0's embedder interface
  (``embed(text, memory_action=None)``, ``embed_batch(texts, memory_action="add")``), so that
  ``Memory`` needs no model download, no torch and no network. Texts sharing words get close
  vectors; the ranking is stable across runs and machines.
* :class:`ScriptedLLM`: an LLM stand-in with mem0's ``generate_response`` interface, answering
  the fact-extraction prompt with facts chosen by the test.
* :func:`offline_memory`: a ``mem0.Memory`` on in-memory qdrant with both installed.

mem0 reads ``MEM0_DIR`` and ``MEM0_TELEMETRY`` when it is first imported: call
:func:`prepare_environment` (or set them) before importing ``mem0``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

DIMS = 64
_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    """Hashed bag of words, L2-normalized; ``dims`` must match the vector store's."""

    def __init__(self, dims: int = DIMS) -> None:
        self.dims = dims

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        vector = [0.0] * self.dims
        for word in _WORD.findall(str(text).lower()):
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "big") % self.dims
            vector[index] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        return [v / norm for v in vector]

    def embed_batch(self, texts: Sequence[str], memory_action: str = "add") -> list[list[float]]:
        return [self.embed(t, memory_action) for t in texts]


class ScriptedLLM:
    """Answers mem0's extraction call with ``facts(messages)`` (default: fixed ``facts``).

    mem0 asks for JSON; the answer is ``{"memory": [{"text": …}, …]}`` plus the older
    ``{"facts": [...]}`` key, so both of mem0's extraction parsers find the facts.
    """

    def __init__(
        self,
        facts: Sequence[str] = (),
        *,
        script: Callable[[list[dict[str, Any]]], Sequence[str]] | None = None,
    ) -> None:
        self.facts = list(facts)
        self.script = script
        self.calls: list[list[dict[str, Any]]] = []

    def generate_response(
        self, messages: list[dict[str, Any]], response_format: Any = None, **kwargs: Any
    ) -> str:
        self.calls.append(messages)
        facts = list(self.script(messages)) if self.script else self.facts
        return json.dumps(
            {
                "memory": [{"id": str(i), "text": f, "event": "ADD"} for i, f in enumerate(facts)],
                "facts": facts,
            }
        )


def prepare_environment(directory: str | Path) -> None:
    """Point mem0 at ``directory`` and turn its telemetry off (before ``import mem0``)."""
    os.environ["MEM0_DIR"] = str(directory)
    os.environ["MEM0_TELEMETRY"] = "false"


def offline_config(
    directory: str | Path, *, collection: str = "gnomon", dims: int = DIMS
) -> dict[str, Any]:
    """A ``Memory.from_config`` dict that never touches the network."""
    return {
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "collection_name": collection,
                "embedding_model_dims": dims,
                "path": ":memory:",
            },
        },
        "embedder": {
            "provider": "openai",
            "config": {"api_key": "sk-offline", "embedding_dims": dims},
        },
        "llm": {"provider": "openai", "config": {"api_key": "sk-offline"}},
        "history_db_path": str(Path(directory) / "history.db"),
    }


def offline_memory(directory: str | Path, *, llm: Any = None, dims: int = DIMS) -> Any:
    """A real ``mem0.Memory``, offline: in-memory qdrant, :class:`HashEmbedder`, and ``llm``
    (a :class:`ScriptedLLM`) for ``infer=True``."""
    from mem0 import Memory

    memory = Memory.from_config(offline_config(directory, dims=dims))
    memory.embedding_model = HashEmbedder(dims)
    if llm is not None:
        memory.llm = llm
    return memory


__all__ = [
    "DIMS",
    "HashEmbedder",
    "ScriptedLLM",
    "offline_config",
    "offline_memory",
    "prepare_environment",
]
