"""Store backends behind one contract (``firewall.store.base.Store``)."""
