"""HTTP tools to pinned origins: ``http_get`` (network, L4) and the shipped ``http_post``.

Invariants, checked by the executor on every call:

* the URL's origin (scheme, host, port) must be one the host pinned; a URL with a user or
  password in it is refused;
* redirects are followed by the tool, not the library, and each target is validated against the
  pins again (a redirect to an unpinned host is refused before any request reaches it);
* credentials never travel as arguments: the host configures them per pinned origin and the tool
  adds them to requests to that origin only (never to a redirect's other origin), and any
  argument that carries one of them is refused;
* the response body is read up to ``max_bytes`` (the rest is never read), with a timeout.

>>> Http(["https://api.example.com"]).pinned("https://api.example.com/v1/items")
True
>>> Http(["https://api.example.com"]).pinned("https://api.example.com.evil.test/")
False
"""

from __future__ import annotations

import http.client
import ssl
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urljoin, urlsplit

from pydantic import Field

from gnomon.firewall.kernel.contracts import BlastRadius, Category, Level, Reversibility
from gnomon.tools.base import (
    Inputs,
    Tool,
    ToolOutput,
    ToolRefused,
    contract,
    no_secret_in,
    shipped,
)

Origin = tuple[str, str, int]
_PORTS = {"http": 80, "https": 443}


class HttpGetInputs(Inputs):
    """``url``: on a pinned origin, with no credentials in it."""

    url: str = Field(min_length=1, max_length=2048)


class HttpOutput(ToolOutput):
    """The final URL, status, content type and body (``truncated``: it was longer)."""

    url: str
    status: int
    content_type: str
    body: str
    truncated: bool = False


def origin_of(url: str) -> Origin:
    """``(scheme, host, port)`` of ``url``, or :class:`ToolRefused` if it has none."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ToolRefused(f"{url!r} is not a URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in _PORTS or not parts.hostname:
        raise ToolRefused(f"{url!r} is not an http(s) URL with a host")
    if parts.username is not None or parts.password is not None:
        raise ToolRefused(
            f"{scheme}://{parts.hostname}: a URL carrying a user or password is refused",
            hint="credentials are injected by the host from its configuration",
        )
    return scheme, parts.hostname.lower(), port or _PORTS[scheme]


class Http:
    """HTTP tools to ``pins`` (origins such as ``https://api.example.com``).

    ``credentials`` maps a pinned origin to the headers the host adds to each request to it
    (``{"https://api.example.com": {"Authorization": "Bearer ..."}}``).
    """

    def __init__(
        self,
        pins: Iterable[str],
        *,
        credentials: Mapping[str, Mapping[str, str]] | None = None,
        timeout: float = 15.0,
        max_bytes: int = 1 << 20,
        max_redirects: int = 5,
        post: bool = True,
    ) -> None:
        self.pins = {origin_of(p) for p in pins}
        self.credentials: dict[Origin, dict[str, str]] = {}
        for where, headers in (credentials or {}).items():
            key = origin_of(where)
            if key not in self.pins:
                raise ToolRefused(f"credentials for {where}, an origin that is not pinned")
            self.credentials[key] = dict(headers)
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects
        self.post_enabled = post
        self._secrets = [
            part
            for headers in self.credentials.values()
            for value in headers.values()
            for part in (value, value.split(" ", 1)[-1])
            if len(part) >= 8
        ]

    def tools(self) -> list[Tool]:
        get = contract(
            "http_get", Category.NETWORK, Level.L4, HttpGetInputs, HttpOutput,
            blast_radius=BlastRadius.EXTERNAL, reversibility=Reversibility.REVERSIBLE,
        )  # fmt: skip
        out = [Tool(get, self.get)]
        if self.post_enabled:
            out.append(Tool(shipped("http_post"), self.post))
        return out

    def pinned(self, url: str) -> bool:
        """Whether ``url`` is on a pinned origin."""
        try:
            return origin_of(url) in self.pins
        except ToolRefused:
            return False

    # -- the executors -------------------------------------------------------------------------

    def get(self, args: dict[str, Any]) -> HttpOutput:
        """Executor of ``http_get``."""
        url = HttpGetInputs.model_validate(args).url
        no_secret_in(args, self._secrets, "http_get")
        return self._fetch("GET", url, None, "http_get")

    def post(self, args: dict[str, Any]) -> HttpOutput:
        """Executor of the shipped ``http_post`` (``url``, ``body``); a 303 redirect becomes a
        GET, as browsers do, and the body is never re-sent to another origin."""
        url, body = args.get("url"), args.get("body")
        if not isinstance(url, str) or not isinstance(body, str):
            raise ToolRefused("http_post refused: url and body must be strings")
        no_secret_in(args, self._secrets, "http_post")
        return self._fetch("POST", url, body.encode("utf-8"), "http_post")

    # -- the request loop ----------------------------------------------------------------------

    def _fetch(self, method: str, url: str, body: bytes | None, tool: str) -> HttpOutput:
        first = origin_of(url)
        for _hop in range(self.max_redirects + 1):
            where = origin_of(url)
            if where not in self.pins:
                why = "redirected to" if where != first or _hop else "to"
                raise ToolRefused(
                    f"{tool} refused: {why} {where[0]}://{where[1]}:{where[2]}, a host that is "
                    "not pinned",
                    hint="the host pins the origins the HTTP tools may reach",
                )
            if body is not None and where != first:
                raise ToolRefused(f"{tool} refused: a redirect would re-send the body elsewhere")
            status, headers, data, truncated = self._one(method, url, where, body)
            location = headers.get("location")
            if status in (301, 302, 303, 307, 308) and location:
                url = urljoin(url, location)
                if status == 303 or (status in (301, 302) and method == "POST"):
                    method, body = "GET", None
                continue
            return HttpOutput(
                url=url,
                status=status,
                content_type=headers.get("content-type", ""),
                body=data.decode("utf-8", errors="replace"),
                truncated=truncated,
            )
        raise ToolRefused(f"{tool} refused: more than {self.max_redirects} redirects")

    def _one(
        self, method: str, url: str, where: Origin, body: bytes | None
    ) -> tuple[int, dict[str, str], bytes, bool]:
        scheme, host, port = where
        conn: http.client.HTTPConnection
        if scheme == "https":
            context = ssl.create_default_context()
            conn = http.client.HTTPSConnection(host, port, timeout=self.timeout, context=context)
        else:
            conn = http.client.HTTPConnection(host, port, timeout=self.timeout)
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        headers = {"User-Agent": "gnomon-tools", **self.credentials.get(where, {})}
        try:
            conn.request(method, target, body=body, headers=headers)
            response = conn.getresponse()
            data = response.read(self.max_bytes + 1)
            got = {k.lower(): v for k, v in response.getheaders()}
            return response.status, got, data[: self.max_bytes], len(data) > self.max_bytes
        except (OSError, http.client.HTTPException) as exc:
            raise ToolRefused(f"{method} {scheme}://{host}:{port} failed: {exc}") from None
        finally:
            conn.close()


__all__ = ["Http", "HttpGetInputs", "HttpOutput", "origin_of"]
