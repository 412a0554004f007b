"""The one error type of the web app: a refusal with its HTTP status (always 4xx) and a
one-line message that names what is wrong and what is allowed. The routes turn it into
``{"error": message}``; nothing changes in a game when a request is refused."""

from __future__ import annotations

BAD_REQUEST = 400
FORBIDDEN = 403
NOT_FOUND = 404
CONFLICT = 409
TOO_LARGE = 413
UNPROCESSABLE = 422
TOO_MANY = 429


class WebError(Exception):
    """A request the app refuses: ``status`` (4xx) and a one-line ``message``."""

    def __init__(self, status: int, message: str) -> None:
        if not 400 <= status < 500:
            raise ValueError(f"a refusal has a 4xx status, got {status}")
        super().__init__(message)
        self.status = status
        self.message = message


__all__ = ["BAD_REQUEST", "CONFLICT", "FORBIDDEN", "NOT_FOUND", "TOO_LARGE", "TOO_MANY", "UNPROCESSABLE", "WebError"]
