"""Gnomon's ContextPolicy presets, shipped as package data.

Each ``<name>.yaml`` here is loadable with ``ContextPolicy.preset("<name>")`` (through
``importlib.resources``, so it works from an installed wheel as well as from a checkout), and
``context-policy.schema.json`` is the JSON Schema every policy document validates against.
"""
