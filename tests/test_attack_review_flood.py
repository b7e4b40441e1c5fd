"""Review listings filter before they limit, and say when they truncate (issue 21, item 6).

The attack: the agent floods the project with guarded reads (each a supported, host-observed
envelope: not a candidate for long-term memory) after the user's one real lesson. ``gnomon
review`` must still list the lesson (it used to read ``limit`` supported beliefs and filter
them afterwards, so the flood filled the window), and a listing cut at its limit says so.

Flip run by hand: reading one page of ``limit`` supported beliefs before filtering (as before)
makes the first test fail.
"""

from __future__ import annotations

from gnomon import firewall
from gnomon.firewall.host.review import harvest
from gnomon.firewall.model.origin import Origin


def _flooded(wall: firewall.Firewall, lessons: int = 1, flood: int = 60) -> list[str]:
    chat = wall.channel(Origin.user("alice"))
    web = wall.channel(Origin.external("tool:web"), project="shop")
    with wall.session(project="shop", actor="coder", user="alice") as s:
        said = [
            s.observe(tool="chat", content=f"Lesson {i}: we deploy on Fridays", origin=chat)
            for i in range(lessons)
        ]
        for i in range(flood):
            s.observe(tool="web.fetch", content=f"page {i}", origin=web)
    return [b.id for o in said for b in o.content]


def test_attack_a_flood_of_guarded_reads_does_not_hide_the_real_lesson() -> None:
    wall = firewall.open("memory://")
    (lesson,) = _flooded(wall)
    queue = harvest(wall.store, "shop", now=wall.clock(), limit=5)
    assert [b.id for b in queue.candidates] == [lesson]
    assert not queue.truncated


def test_a_listing_cut_at_its_limit_says_so() -> None:
    wall = firewall.open("memory://")
    lessons = _flooded(wall, lessons=4, flood=3)
    queue = harvest(wall.store, "shop", now=wall.clock(), limit=2)
    assert len(queue.candidates) == 2 and set(b.id for b in queue.candidates) <= set(lessons)
    assert queue.truncated and queue.to_json()["truncated"] is True
    whole = harvest(wall.store, "shop", now=wall.clock(), limit=10)
    assert len(whole.candidates) == 4 and not whole.truncated
