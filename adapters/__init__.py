"""Memory-store adapters (mem0, Letta, Zep): one module per store, one shared contract.

Each adapter imports its SDK at the top of its own module; importing an adapter whose SDK is
missing raises an error naming the exact ``pip install`` command. The adapters themselves arrive
with the drop-in-firewall work; this package holds their shared contract.
"""
