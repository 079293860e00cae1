"""Bearer tokens: an access token for every ``/v1`` route, an operator token for the
trace layers that can hold reasoning or raw provider traffic.

- No access token configured (``serve --no-token``, loopback only): ``/v1`` is open.
  ``serve`` otherwise always has one, given or generated (``daemon_token.py``).
- The operator token also counts as access.
- No operator token configured: whoever has access may read every trace layer.

Tokens are compared in constant time.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from thoughtline.server.errors import ApiError

bearer_scheme = HTTPBearer(
    auto_error=False, description="The daemon's --token (or operator token)."
)


@dataclass(frozen=True, slots=True)
class Tokens:
    access: str | None = None
    operator: str | None = None


def _matches(given: str, expected: str | None) -> bool:
    if expected is None:
        return False
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def _tokens(request: Request) -> Tokens:
    tokens: Tokens = request.app.state.tokens
    return tokens


Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)]


async def require_access(request: Request, credentials: Credentials) -> None:
    """Dependency of every ``/v1`` route: 401 unless the bearer token grants access.
    ``async`` although it never waits: FastAPI runs a plain function dependency in a
    worker thread, a thread hop on every request."""
    tokens = _tokens(request)
    if tokens.access is None:
        return
    given = credentials.credentials if credentials is not None else None
    if given is not None:
        # Both comparisons always run, so timing does not tell which token nearly matched.
        access = _matches(given, tokens.access)
        operator = _matches(given, tokens.operator)
        if access or operator:
            return
    raise ApiError(
        401,
        "UNAUTHORIZED",
        "This daemon needs 'Authorization: Bearer <token>' (its --token or THOUGHTLINE_TOKEN).",
        headers={"WWW-Authenticate": "Bearer"},
    )


def is_operator(request: Request, credentials: HTTPAuthorizationCredentials | None) -> bool:
    """True when the caller may read operator-only trace layers."""
    tokens = _tokens(request)
    if tokens.operator is None:
        return True
    return credentials is not None and _matches(credentials.credentials, tokens.operator)
