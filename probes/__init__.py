"""Gnomon's executable threat model: one probe per attack, each stating what it asserts.

Run them with ``gnomon probes run`` or :func:`probes.runner.run_all`.
"""
