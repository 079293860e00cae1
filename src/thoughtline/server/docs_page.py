"""``/docs``: a small page of the daemon itself describing its API.

FastAPI's interactive docs load their scripts and styles from a CDN, so they would not
work offline (and would make the daemon's page depend on a third party). This page is
built from the same OpenAPI document instead: every operation with its summary, and
where the full description lives.
"""

from __future__ import annotations

from html import escape
from typing import Any, Final

DOCS_HEADERS: Final = {
    # Nothing to run and nothing to fetch: only the inline style below.
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
    "X-Content-Type-Options": "nosniff",
}
_METHODS: Final = ("get", "post", "put", "patch", "delete")
_STYLE: Final = (
    "body{font:15px/1.5 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem}"
    "code{font:0.9em ui-monospace,monospace}table{border-collapse:collapse;width:100%}"
    "td,th{text-align:left;padding:4px 8px;border-top:1px solid #8884;vertical-align:top}"
    "td:first-child{white-space:nowrap}"
)


def docs_page(openapi: dict[str, Any]) -> str:
    """The HTML of ``/docs`` for the daemon's ``openapi`` document."""
    info = openapi.get("info", {})
    rows = []
    for path, operations in openapi.get("paths", {}).items():
        for method in _METHODS:
            operation = operations.get(method)
            if operation is None:
                continue
            summary = operation.get("summary") or ""
            description = (operation.get("description") or "").strip().split("\n\n")[0]
            rows.append(
                f"<tr><td><code>{method.upper()} {escape(path)}</code></td>"
                f"<td><strong>{escape(summary)}</strong> {escape(description)}</td></tr>"
            )
    title = escape(str(info.get("title", "thoughtline daemon")))
    version = escape(str(info.get("version", "")))
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{title} API</title><style>{_STYLE}</style></head><body>"
        f"<h1>{title} API <small>{version}</small></h1>"
        "<p>The JSON API lives under <code>/v1</code>; every request carries "
        "<code>Authorization: Bearer TOKEN</code>: the daemon's <code>--token</code>, or the "
        "one it generated into <code>$THOUGHTLINE_HOME/daemon.token</code>. "
        "The machine-readable description is the "
        "<a href='/openapi.json'>OpenAPI document</a> (<code>/openapi.json</code>): load it "
        "into any OpenAPI viewer or client generator. Request fields, the run snapshot, "
        "live events and error codes are described in <code>docs/contracts.md</code> of "
        "thoughtline's source. The <a href='/'>web page</a> watches runs live.</p>"
        "<table><thead><tr><th>route</th><th>what it does</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></body></html>"
    )
