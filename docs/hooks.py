"""MkDocs hooks: reference pages generated from the code at build time, so they cannot rot.

- ``reference/context-policy.md`` and ``reference/action-policy.md``: the JSON Schemas of
  :class:`ContextPolicy` and :class:`ActionPolicy`, as tables, then the schema itself;
- ``reference/proxy-config.md``: the MCP proxy config's schema and its categories with floors;
- ``reference/contracts.md``: the shipped tool contracts (``BUILTIN``);
- ``reference/cli.md``: every command, from the click tree (mkdocs-click);
- in any page, the line ``<!-- gnomon:categories -->`` becomes the category/floor table.
"""

from __future__ import annotations

import json
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

CATEGORIES_MARK = "<!-- gnomon:categories -->"


def _type(schema: dict[str, Any]) -> str:
    """A short, human spelling of one property's type."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    if "anyOf" in schema:
        return " or ".join(_type(s) for s in schema["anyOf"])
    if "enum" in schema:
        return "one of " + ", ".join(f"`{v}`" for v in schema["enum"])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {_type(schema.get('items', {}))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"map of name to {_type(schema['additionalProperties'])}"
    if kind == "object" and schema.get("patternProperties"):
        ((pattern, value),) = schema["patternProperties"].items()
        return f"map of name (`{pattern}`) to {_type(value)}"
    if kind == "string" and "pattern" in schema and len(schema["pattern"]) <= 40:
        return f"string matching `{schema['pattern']}`"
    return f"`{kind}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(schema: dict[str, Any]) -> list[str]:
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    if "enum" in schema:
        return ["Values: " + ", ".join(f"`{v}`" for v in schema["enum"]), ""]
    lines = ["| field | type | default | description |", "|---|---|---|---|"]
    for name, prop in props.items():
        if name in required:
            default = "**required**"
        elif "default" in prop:
            default = f"`{json.dumps(prop['default'])}`"
        else:
            default = "empty"
        description = prop.get("description", "")
        cells = [f"`{name}`", _cell(_type(prop)), _cell(default), _cell(description)]
        lines.append("| " + " | ".join(cells) + " |")
    extra = schema.get("additionalProperties")
    lines.append("")
    if extra is False:
        lines += ["Unknown keys are refused.", ""]
    return lines


def schema_page(title: str, intro: str, schema: dict[str, Any]) -> str:
    """One reference page: the root object, each definition, then the schema verbatim."""
    out = [f"# {title}", "", intro, ""]
    if schema.get("description"):
        out += [schema["description"], ""]
    out += _table(schema)
    for name, definition in schema.get("$defs", {}).items():
        out += [f"## {name}", ""]
        if definition.get("description"):
            out += [definition["description"], ""]
        out += _table(definition)
    out += ["## The JSON Schema", "", "```json", json.dumps(schema, indent=2), "```", ""]
    return "\n".join(out)


def categories_table() -> str:
    from gnomon.firewall.kernel.contracts import FLOORS

    rows = ["| category | floor (lowest level a contract may declare) |", "|---|---|"]
    rows += [f"| `{c.value}` | {level.name} |" for c, level in FLOORS.items()]
    return "\n".join(rows)


def contracts_page() -> str:
    from gnomon.firewall.kernel.contracts import BUILTIN

    out = [
        "# Built-in tool contracts",
        "",
        "`gnomon.firewall.kernel.contracts.BUILTIN`, generated from the code. "
        "`ToolRegistry.builtin()` holds these; see [Custom tools](../custom-tools.md) "
        "to add your own.",
        "",
        "| tool | category | level | blast radius | reversibility | data | precondition | inputs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in BUILTIN:
        pre = ", ".join(f"`{p.kind.value}` on `{p.arg}`" for p in c.preconditions) or "-"
        fields = ", ".join(f"`{f}`" for f in c.inputs.model_fields)
        out.append(
            f"| `{c.tool}` | `{c.category.value}` | {c.required_level.name} | "
            f"{c.blast_radius.value} | {c.reversibility.value} | {c.data_sensitivity.value} | "
            f"{pre} | {fields} |"
        )
    out += ["", "## Categories and their floors", "", categories_table(), ""]
    return "\n".join(out)


CLI_PAGE = """# Command line: every option

Generated from the click commands at build time. The [command line page](../cli.md) gives the
exit statuses and a one-line summary of each command.

::: mkdocs-click
    :module: gnomon.firewall.cli
    :command: cli
    :prog_name: gnomon
    :depth: 1
    :style: table
    :list_subcommands: true
"""


def pages() -> dict[str, str]:
    """The generated pages, by path under docs/."""
    from gnomon.firewall import ContextPolicy
    from gnomon.firewall.host.mcp_config import ProxyConfig
    from gnomon.firewall.kernel.actionpolicy import ActionPolicy

    proxy_intro = (
        "The YAML file `gnomon mcp proxy --config FILE` reads (see [the MCP guide](../mcp.md)). "
        "Each tool's `category` sets the lowest level its contract may declare:\n\n"
        + categories_table()
    )
    return {
        "reference/context-policy.md": schema_page(
            "ContextPolicy schema",
            "Generated from `ContextPolicy.json_schema()` (also `gnomon policy schema`, and "
            "shipped as `policies/context-policy.schema.json`). See [Concepts](../concepts.md).",
            ContextPolicy.json_schema(),
        ),
        "reference/action-policy.md": schema_page(
            "Action policy schema",
            "Generated from `ActionPolicy.json_schema()` (shipped as "
            "`policies/action-policy.schema.json`). See [Actions](../actions.md).",
            ActionPolicy.json_schema(),
        ),
        "reference/proxy-config.md": schema_page(
            "MCP proxy config schema", proxy_intro, ProxyConfig.model_json_schema()
        ),
        "reference/contracts.md": contracts_page(),
        "reference/cli.md": CLI_PAGE,
    }


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for path, content in pages().items():
        files.append(File.generated(config, path, content=content))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    return markdown.replace(CATEGORIES_MARK, categories_table())
