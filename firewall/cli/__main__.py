"""``python -m firewall.cli``: the ``gnomon`` command, for launchers that take an interpreter."""

from firewall.cli import main

main()
