"""The cap on a run's request text: ``[orchestration] max_request_bytes``.

Every front end (the command line, the library, the daemon, MCP, ACP) prepares a run
through :func:`~thoughtline.runtime.planning.specs.plan_run`, which applies the cap before
anything is stored or sent; the command line also stops reading stdin one byte past it.
"""

from __future__ import annotations

from thoughtline._user_files import describe_size
from thoughtline.config import MAX_REQUEST_BYTES_CEILING
from thoughtline.errors import ThoughtlineError

_RAISE_IT = (
    f"raise orchestration.max_request_bytes (up to {describe_size(MAX_REQUEST_BYTES_CEILING)}) "
    "in thoughtline.toml to allow more."
)


def request_size(request: str) -> int:
    """``request``'s length in bytes of UTF-8 (a lone surrogate counts as its 3 bytes)."""
    return len(request.encode("utf-8", "surrogatepass"))


def request_too_large(limit: int, size: int | None = None) -> ThoughtlineError:
    """``REQUEST_TOO_LARGE`` naming the limit and the key that raises it; ``size`` is
    left out where the request was not read to its end (stdin)."""
    found = "larger than" if size is None else f"{size:,} bytes of UTF-8 text, more than"
    return ThoughtlineError(
        "REQUEST_TOO_LARGE",
        f"The request is {found} the limit of {describe_size(limit)}; {_RAISE_IT}",
    )


def check_request_size(request: str, limit: int) -> None:
    """Raise :func:`request_too_large` when ``request`` is longer than ``limit`` bytes."""
    # Every character is 1 to 4 bytes: most requests are decided without encoding them.
    if len(request) * 4 <= limit:
        return
    size = request_size(request)
    if size > limit:
        raise request_too_large(limit, size)
