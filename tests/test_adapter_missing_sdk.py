"""Importing an adapter whose SDK is absent names the exact pip command."""

from __future__ import annotations

import importlib
import sys

import pytest

from gnomon.adapters.errors import MissingSDKError


@pytest.mark.parametrize(
    ("module", "sdk", "command"),
    [
        ("gnomon.adapters.letta", "letta_client", "pip install 'gnomon[letta]'"),
        ("gnomon.adapters.zep", "zep_cloud", "pip install 'gnomon[zep]'"),
        (
            "gnomon.adapters.langchain_tools",
            "langchain_core.tools",
            "pip install 'gnomon[langchain]'",
        ),
        ("gnomon.adapters.openai_agents_tools", "agents", "pip install 'gnomon[openai-agents]'"),
        ("gnomon.adapters.pydantic_ai_tools", "pydantic_ai", "pip install 'gnomon[pydantic-ai]'"),
        (
            "gnomon.adapters.frameworks.autogen_tools",
            "autogen_core",
            "pip install 'gnomon[autogen]'",
        ),
        ("gnomon.adapters.frameworks.crewai_tools", "crewai.tools", "pip install 'gnomon[crewai]'"),
        ("gnomon.tools.mcp_server", "mcp_types", "pip install 'gnomon[mcp]'"),
    ],
)
def test_missing_sdk_names_the_pip_command(
    monkeypatch: pytest.MonkeyPatch, module: str, sdk: str, command: str
) -> None:
    monkeypatch.setitem(sys.modules, sdk, None)  # "import sdk" now raises ImportError
    monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(MissingSDKError) as raised:
        importlib.import_module(module)
    assert raised.value.command == command and command in str(raised.value.hint)
