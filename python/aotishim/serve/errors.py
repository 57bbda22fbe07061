"""The one error a served request can end in that is the client's to fix."""

from __future__ import annotations


class RequestError(ValueError):
    """A request the server refuses, with the HTTP status that says why: 400
    (malformed payload or ID), 404 (no such model), 422 (inputs outside the
    model's spec, or a stored model that cannot be loaded here)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def __reduce__(self):  # crosses Ray's process boundary intact
        return (RequestError, (self.status, self.message))
