"""Response headers that keep the daemon's page to itself.

The page starts and cancels runs. Another site that framed it could overlay its buttons
(clickjacking), so no page may frame it: ``frame-ancestors 'none'`` and, for browsers
that predate it, ``X-Frame-Options: DENY``. The page loads only its own scripts and
styles (``static/``), never inline ones, so the policy allows nothing else; the one
exception is the empty ``data:`` favicon, which spares a request that would only 404.

Every response gets these headers unless it set its own (``/docs`` has a policy of its
own): JSON and event streams are not rendered, so the policy costs them nothing, and a
response that is never framed or sniffed needs no exception.
"""

from __future__ import annotations

from typing import Final

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_SECURITY_POLICY: Final = (
    "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
PAGE_HEADERS: Final = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
_ENCODED: Final = [
    (name.lower().encode("latin-1"), value.encode("latin-1"))
    for name, value in PAGE_HEADERS.items()
]


class PageHeaders:
    """ASGI middleware adding :data:`PAGE_HEADERS` to every HTTP response that does not
    already carry a header of the same name."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers.extend(item for item in _ENCODED if item[0] not in present)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
