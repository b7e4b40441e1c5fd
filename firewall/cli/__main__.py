"""``python -m gnomon.firewall.cli``: the ``gnomon`` command."""

from gnomon.firewall.cli import main

main()
