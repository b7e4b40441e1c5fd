"""The trust report's HTML, rendered by a real headless Chromium and checked pixel by pixel.

Runs wherever ``chromium`` is installed; under ``CI=true`` a missing browser is a failure, not a
skip (``.ci/run`` installs Debian's ``chromium`` package when it runs as root). The PNG is decoded
with the standard library (zlib and the five PNG row filters), only as far as the rows checked.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from gnomon import firewall
from gnomon.firewall import Origin
from gnomon.firewall.audit.report import SECTIONS, build_report, render_html
from tests.attested import attested

WIDTH, HEIGHT = 1280, 900
RED = (0xCF, 0x22, 0x2E)  # .verdict.red in firewall/audit/report_render.py
GREEN = (0x1A, 0x7F, 0x37)
BLUE = (0x05, 0x50, 0xAE)  # .blue: contained
PILL_BAD = (0xFF, 0xEB, 0xE9)  # .bad state pill (quarantined), also the warning box
PILL_WATCH = (0xFF, 0xF8, 0xC5)  # .watch state pill (unverified, restricted)
PILL_GOOD = (0xDA, 0xFB, 0xE1)  # .good state pill (supported, clean)


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed (CI installs it in .ci/run)")
        pytest.skip("chromium is not installed")
    return found


def screenshot(html: str, tmp_path: Path, height: int = HEIGHT) -> bytes:
    tmp_path.mkdir(parents=True, exist_ok=True)
    page, png = tmp_path / "report.html", tmp_path / "report.png"
    page.write_text(html, encoding="utf-8")
    command = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--screenshot={png}",
        f"--window-size={WIDTH},{height}",
        page.as_uri(),
    ]
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    return png.read_bytes()


def decode_rows(data: bytes, rows: int) -> tuple[int, int, list[bytes], int]:
    """``(width, height, the first rows as RGB(A) bytes, channels)`` of an 8-bit,
    non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    width = height = channels = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and interlace == 0 and color in (2, 6)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    out: list[bytes] = []
    prev = bytearray(stride)
    for y in range(min(rows, height)):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b = prev[x]
            c = prev[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + a) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + b) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + ((a + b) >> 1)) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pred) & 0xFF
        out.append(bytes(line))
        prev = line
    return width, height, out, channels


def colors(data: bytes, rows: int) -> dict[tuple[int, int, int], int]:
    _, _, lines, channels = decode_rows(data, rows)
    counts: dict[tuple[int, int, int], int] = {}
    for line in lines:
        for x in range(0, len(line), channels * 4):  # every 4th pixel is plenty
            rgb = (line[x], line[x + 1], line[x + 2])
            counts[rgb] = counts.get(rgb, 0) + 1
    return counts


def near(counts: dict[tuple[int, int, int], int], target: tuple[int, int, int]) -> int:
    return sum(
        n
        for rgb, n in counts.items()
        if max(abs(a - b) for a, b in zip(rgb, target, strict=False)) <= 6
    )


def test_report_screenshot_shows_the_red_verdict(tmp_path: Path) -> None:
    chromium()
    wall = firewall.open("memory://")
    with wall.session(project="shop", actor="coder", user="alice") as s:
        s.observe(
            tool="chat", content="We deploy on Fridays", origin=attested(wall, Origin.user("alice"))
        )
        (page,) = s.observe(
            tool="fetch",
            content="Patch: disable TLS verification with verify=False",
            origin=Origin.external("web:stackoverflow.com"),
        ).content
        s.recall("patch tls verification", policy="reference")
        s.decide("apply the Stack Overflow patch", [page.id], policy="reference")
    png = screenshot(render_html(build_report(wall.store, s.id)), tmp_path)
    assert len(png) > 20_000, "a blank page compresses to almost nothing"
    width, height, _, _ = decode_rows(png, 0)
    assert (width, height) == (WIDTH, HEIGHT)
    counts = colors(png, 260)
    white = near(counts, (255, 255, 255))
    total = sum(counts.values())
    assert white < total * 0.95, "the page is not blank"
    assert near(counts, RED) > 2000, "the red verdict banner is drawn near the top"
    assert near(counts, GREEN) == 0


def test_a_clean_session_gets_the_green_banner(tmp_path: Path) -> None:
    chromium()
    wall = firewall.open("memory://")
    with wall.session(project="shop", actor="coder", user="alice") as s:
        s.observe(
            tool="chat", content="We deploy on Fridays", origin=attested(wall, Origin.user("alice"))
        )
        s.recall("deploy fridays")
    counts = colors(screenshot(render_html(build_report(wall.store, s.id)), tmp_path), 260)
    assert near(counts, GREEN) > 2000 and near(counts, RED) == 0


def test_a_contained_session_gets_the_blue_banner_and_coloured_states(tmp_path: Path) -> None:
    """The demo's reading session: untrusted files held, one quarantined, a credential in them.
    The banner is blue (contained, not clean), the states are coloured pills, the page is no
    wider than the window, and the live token is not on it. (Looked at by eye when written:
    tests/test_report_screenshot.py keeps the PNG in its tmp_path.)"""
    from gnomon.firewall.host.demo import run_demo

    chromium()
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    result = run_demo(url)
    with firewall.open(url) as wall:
        report = build_report(wall.store, result.sessions["reader"])
    page = render_html(report)
    assert report.verdict.level == "blue" and "sk-live-4f9a1c0ffee" not in page
    top = colors(screenshot(page, tmp_path), 260)
    assert near(top, BLUE) > 2000, "the blue verdict banner is drawn near the top"
    assert near(top, GREEN) == 0 and near(top, RED) == 0
    # the Beliefs section alone (a report of one section, through the section hook): the
    # quarantined, restricted and supported states are drawn as coloured pills
    with firewall.open(url) as wall:
        beliefs = build_report(
            wall.store,
            result.sessions["reader"],
            sections=[b for b in SECTIONS if b.__name__ == "_beliefs"],
        )
    shot = screenshot(render_html(beliefs), tmp_path / "beliefs", height=1200)
    drawn = colors(shot, 1200)
    for pill in (PILL_BAD, PILL_WATCH, PILL_GOOD):
        assert near(drawn, pill) > 20, f"no state pill drawn in {pill}"
    # readable widths: at 1280 px no table is wider than the page (each sits in a scroll box;
    # count the boxes whose content overflows, in the browser, after layout)
    fits = tmp_path / "fits.html"
    fits.write_text(
        page.replace(
            "</body>",
            "<script>document.body.dataset.overflowing = [...document.querySelectorAll('.scroll')]"
            ".filter(d => d.scrollWidth > d.clientWidth + 1).length</script></body>",
        ),
        encoding="utf-8",
    )
    dom = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile2'}", f"--window-size={WIDTH},{HEIGHT}",
         "--dump-dom", fits.as_uri()],
        check=True, capture_output=True, text=True, timeout=120,
    ).stdout  # fmt: skip
    assert 'data-overflowing="0"' in dom, "a table is wider than a 1280 px window"
