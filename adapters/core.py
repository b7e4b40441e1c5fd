"""The one guarded-client core every SDK wrapper is built from.

* :class:`Refusing`: a guarded client or resource refuses every attribute it does not define
  (:class:`~adapters.errors.RefusedAttributeError`, an ``AttributeError``), never passing it
  through to the SDK.
"""

from __future__ import annotations

from typing import Any, ClassVar

from adapters.errors import refused_attribute


class Refusing:
    """Any public attribute not defined on a guarded client or resource is refused.

    ``_store`` names the store in the error, ``_path`` the resource (``"agents.blocks."``)."""

    _store: ClassVar[str] = ""
    _path: ClassVar[str] = ""
    _hint: ClassVar[str] = ""

    def __getattr__(self, name: str) -> Any:
        guarded = sorted(n for n in dir(type(self)) if not n.startswith("_"))
        hint = f"guarded here: {', '.join(guarded) or 'none'}"
        raise refused_attribute(
            self._store, f"{self._path}{name}", f"{hint}{self._hint}" if self._hint else hint
        )


__all__ = ["Refusing"]
