"""The store contract against ``postgresql://``: a fresh tenant per test, in a private schema."""

from __future__ import annotations

import secrets
from pathlib import Path

import psycopg
import pytest

from gnomon.firewall.store.base import Store
from gnomon.firewall.store.postgres import PostgresStore
from tests.store_contract import StoreContract

pytestmark = pytest.mark.postgres


class TestPostgresStore(StoreContract):
    @pytest.fixture(autouse=True)
    def _server(self, postgres_url: str) -> None:
        self.url = postgres_url

    def make_store(self, tmp_path: Path) -> Store:
        return PostgresStore(self.url, tenant=f"contract_{secrets.token_hex(6)}", pool_size=4)

    def tamper_body(self, store: Store, seq: int, body: bytes) -> None:
        assert isinstance(store, PostgresStore)
        with psycopg.connect(store.conninfo, autocommit=True) as conn:
            conn.execute(
                "UPDATE events SET body = %s WHERE tenant = %s AND seq = %s",
                (body, store.tenant, seq),
            )
