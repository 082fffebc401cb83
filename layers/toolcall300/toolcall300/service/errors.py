"""One error hierarchy for the service, each class carrying its HTTP status and a stable code.

Domain code raises these; exactly one place (``toolcall300.service.api.resolver``) turns them into
``{"error": {"code", "message"}}`` responses. Nothing decides a status by reading message
text. The tool-argument/v1 checker answers a refusal in its own body (``{"refusal": ...}``);
its HTTP status comes from :data:`REFUSAL_STATUS` here, the core knowing only the codes. This
module deliberately imports nothing third-party, so domain code stays SDK-free.
"""

from __future__ import annotations

from typing import Any

from toolcall300.argcheck.check import CAP_BODY, CAP_CHECK, REFUSAL_CODES


class BackendError(Exception):
    """Base of every error the service answers with; ``status`` is the suggested HTTP status."""

    status = 500
    code = "internal"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.headers: dict[str, str] = dict(headers or {})
        #: Facts the caller needs besides the message (a 402's price and where to buy).
        self.details: dict[str, Any] = dict(details or {})

    def body(self) -> dict[str, dict[str, Any]]:
        """The JSON error body shared by every route (docs/api.md, "Errors"): code, message and
        any details."""
        return {"error": {**self.details, "code": self.code, "message": self.message}}


class BadRequest(BackendError):
    status, code = 400, "bad_request"


class Unauthorized(BackendError):
    status, code = 401, "unauthorized"


class PaymentRequired(BackendError):
    status, code = 402, "payment_required"


class Forbidden(BackendError):
    status, code = 403, "forbidden"


class NotFound(BackendError):
    status, code = 404, "not_found"


class Conflict(BackendError):
    status, code = 409, "conflict"


class PayloadTooLarge(BackendError):
    status, code = 413, "payload_too_large"


class UnsupportedMediaType(BackendError):
    """A body the route cannot read in the ``Content-Type`` it was sent as (JSON routes)."""

    status, code = 415, "unsupported_media_type"


class TooManyRequests(BackendError):
    status, code = 429, "too_many_requests"


class UpstreamUnavailable(BackendError):
    """An AWS or Stripe dependency failed; the client may retry."""

    status, code = 503, "upstream_unavailable"


class StoreConflict(Exception):
    """A conditional write lost a race; callers retry or translate. Not an HTTP error itself."""


#: HTTP status of each tool-argument/v1 refusal code: the body cap is 413 (the criteria's free
#: refusals), the CPU budget 422 (criteria D20), every other refusal 400.
REFUSAL_STATUS: dict[str, int] = {
    **dict.fromkeys(REFUSAL_CODES, 400),
    CAP_BODY: 413,
    CAP_CHECK: 422,
}


def refusal_status(code: str) -> int:
    """The HTTP status of a checker refusal (:data:`REFUSAL_STATUS`)."""
    return REFUSAL_STATUS[code]
