"""Attacks on what an approved ``fs_write`` would do once it runs (issue 24, item 4).

The approver approves a write of reviewed text to a path under the kit's root. Between the hold
and the approval the agent changes what that write would mean: it edits or replaces the file
the approver saw (the write would clobber data nobody reviewed), swaps the parent folder for
another one (the write lands in a folder nobody chose), or plants a link where the file will be
written. Real files, real folders, real links, the kit's real executor behind the kernel; each
is refused at execution, before the executor runs, and recorded (``action.refused``).

Each attack has its flip: the same sequence with the kit's pin removed from the contract. The
edit and the swap then go through (the write clobbers the unreviewed text, or lands in the
swapped folder); the planted link is still stopped by the executor's own walk (no link is
followed), so its flip removes that too and the write leaves the root.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gnomon import firewall
from gnomon.firewall.kernel import ActionKernel, ApprovalSigner, PolicySigner, load_action_policy
from gnomon.firewall.kernel.actionpolicy import preset_bytes
from gnomon.firewall.model.origin import Origin
from gnomon.tools import Files, Toolkit
from gnomon.tools.base import Tool

Attack = Callable[[Path, Path], None]


def _edited(root: Path, _outside: Path) -> None:
    (root / "docs" / "plan.txt").write_text("the unreviewed plan the agent wants clobbered")


def _replaced(root: Path, _outside: Path) -> None:
    (root / "docs" / "fresh.txt").write_text("a new plan nobody reviewed")
    os.replace(root / "docs" / "fresh.txt", root / "docs" / "plan.txt")  # as an editor saves


def _parent_swapped(root: Path, _outside: Path) -> None:
    (root / "docs").rename(root / "docs.reviewed")
    (root / "docs").mkdir()  # another folder under the same name


def _link_planted(root: Path, outside: Path) -> None:
    (root / "docs" / "plan.txt").unlink()
    (root / "docs" / "plan.txt").symlink_to(outside / "victim.txt")


def _folder_instead(root: Path, _outside: Path) -> None:
    (root / "docs" / "plan.txt").unlink()
    (root / "docs" / "plan.txt").mkdir()


ATTACKS: dict[str, Attack] = {
    "file edited": _edited,
    "file replaced": _replaced,
    "parent swapped": _parent_swapped,
    "link planted": _link_planted,
    "file replaced by a folder": _folder_instead,
}


class Host:
    def __init__(self, wall: firewall.Firewall, kernel: ActionKernel, approver: ApprovalSigner):
        self.wall, self.kernel, self.approver = wall, kernel, approver


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "work", tmp_path / "outside"
    (root / "docs").mkdir(parents=True)
    outside.mkdir()
    (root / "docs" / "plan.txt").write_text("reviewed plan")
    (outside / "victim.txt").write_text("outside the root")
    return root, outside


def _host(tmp_path: Path, root: Path, *, pinned: bool, db: str = "g") -> Iterator[Host]:
    files = Files(root)
    write = next(t for t in files.tools() if t.name == "fs_write")
    if not pinned:  # the flip: the kit's fs_write without its pin
        write = Tool(write.contract.model_copy(update={"preconditions": ()}), write.run)
    kit = Toolkit(write)
    (tmp_path / "actions.yaml").write_bytes(preset_bytes("default"))
    operator, approver = PolicySigner.generate(), ApprovalSigner.generate("alice")
    operator.sign_file(tmp_path / "actions.yaml")
    with firewall.open(f"sqlite:///{tmp_path}/{db}.db") as wall:
        kernel = ActionKernel(
            wall,
            load_action_policy(tmp_path / "actions.yaml", keys=[operator.public_key]),
            operator_keys=[operator.public_key],
            approver_keys=[approver.public_key],
            registry=kit.registry(),
            executors=kit.executors(),
        )
        yield Host(wall, kernel, approver)


def _approved_after(h: Host, attack: Callable[[], None]) -> tuple[str, tuple[str, ...], object]:
    args = {"path": "docs/plan.txt", "content": "the approved text"}
    with h.wall.session(project="p", actor="coder", user="bob") as s:
        # the README names the values, so under per-value provenance the L3 write is held
        s.observe(
            tool="fs_read", content="write docs/plan.txt: the approved text",
            origin=Origin.external("file:README"),
        )  # fmt: skip
        held = h.kernel.handle(s).request("fs_write", args)
    assert held.status == "held", held
    request = next(r for r in h.kernel.holds() if r.id == held.request_id)
    attack()
    result = h.kernel.submit(h.approver.approve(request, now=h.wall.clock()))
    return result.status, result.reasons, result.failure


def _refusals(wall: firewall.Firewall) -> list[str]:
    return [
        str(p) for e in wall.store.events() if e.kind == "action.refused"
        for p in e.payload["problems"]
    ]  # fmt: skip


@pytest.mark.parametrize("name", list(ATTACKS))
def test_attack_a_change_after_the_approval_refuses_the_write(
    name: str, tmp_path: Path, places: tuple[Path, Path]
) -> None:
    root, outside = places
    for h in _host(tmp_path, root, pinned=True):
        status, reasons, _ = _approved_after(h, lambda: ATTACKS[name](root, outside))
        assert status == "refused", (status, reasons)
        refusals = _refusals(h.wall)
        assert refusals and any(r.startswith(("file_unchanged", "file_target")) for r in refusals)
        assert not any(e.kind == "action.executed" for e in h.wall.store.events())
    assert "the approved text" not in (outside / "victim.txt").read_text()
    for found in root.rglob("*.txt"):
        if found.is_file() and not found.is_symlink():
            assert found.read_text() != "the approved text", found


def test_with_nothing_changed_the_approved_write_runs(
    tmp_path: Path, places: tuple[Path, Path]
) -> None:
    root, _ = places
    for h in _host(tmp_path, root, pinned=True):
        status, reasons, failure = _approved_after(h, lambda: None)
        assert status == "executed" and failure is None, (status, reasons, failure)
    assert (root / "docs" / "plan.txt").read_text() == "the approved text"


def test_a_write_into_a_new_folder_still_runs(tmp_path: Path) -> None:
    """The pin of a path whose folder does not exist yet: absent stays absent, and the write
    creates the folder (benign utility kept)."""
    root = tmp_path / "work"
    root.mkdir()
    for h in _host(tmp_path, root, pinned=True):
        with h.wall.session(project="p", actor="coder", user="bob") as s:
            done = h.kernel.handle(s).request("fs_write", {"path": "new/a.txt", "content": "x"})
        assert done.status == "executed" and done.failure is None, done
    assert (root / "new" / "a.txt").read_text() == "x"


def test_attack_a_path_out_of_the_root_is_pinned_unreadable_and_refused(tmp_path: Path) -> None:
    """``..`` out of the root: the kernel does not read the file outside to pin it (its
    snapshot is unreadable), and the approved call is refused before the executor runs."""
    root = tmp_path / "work"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("TOP SECRET")
    for h in _host(tmp_path, root, pinned=True):
        with h.wall.session(project="p", actor="coder", user="bob") as s:
            s.observe(tool="fs_read", content="../secret.txt", origin=Origin.external("x"))
            held = h.kernel.handle(s).request("fs_write", {"path": "../secret.txt", "content": ""})
        proposed = next(e for e in h.wall.store.events() if e.kind == "action.proposed")
        assert all(str(tmp_path / "secret.txt") != p["target"] for p in
                   proposed.payload["preconditions"])  # fmt: skip
        request = next(r for r in h.kernel.holds() if r.id == held.request_id)
        result = h.kernel.submit(h.approver.approve(request, now=h.wall.clock()))
        assert result.status == "refused", result
    assert (tmp_path / "secret.txt").read_text() == "TOP SECRET"


# -- the flips ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["file edited", "parent swapped"])
def test_flip_without_the_pin_the_write_lands_where_nobody_approved(
    name: str, tmp_path: Path, places: tuple[Path, Path]
) -> None:
    root, outside = places
    for h in _host(tmp_path, root, pinned=False):
        status, reasons, failure = _approved_after(h, lambda: ATTACKS[name](root, outside))
        assert status == "executed" and failure is None, (status, reasons, failure)
    # the unreviewed text was clobbered / the write landed in the swapped-in folder
    assert (root / "docs" / "plan.txt").read_text() == "the approved text"


def test_flip_without_the_pin_a_planted_link_is_left_to_the_executor(
    tmp_path: Path, places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, outside = places
    for h in _host(tmp_path, root, pinned=False):
        status, _, failure = _approved_after(h, lambda: _link_planted(root, outside))
        # the kernel let it run; the executor's own walk refused the link
        assert status == "executed" and "link" in str(failure), failure
    assert (outside / "victim.txt").read_text() == "outside the root"
    # without the executor's no-follow walk too, the write leaves the root
    monkeypatch.setattr(os, "O_NOFOLLOW", 0)
    monkeypatch.setattr(Files, "_inside", lambda *a: None)
    for h in _host(tmp_path, root, pinned=False, db="second"):
        (root / "docs" / "plan.txt").unlink()
        (root / "docs" / "plan.txt").write_text("reviewed plan")
        status, _, failure = _approved_after(h, lambda: _link_planted(root, outside))
        assert status == "executed" and failure is None, failure
    assert (outside / "victim.txt").read_text() == "the approved text"
