"""The local stack's stand-in for Stripe's hosted checkout page: ``/dev/checkout/{session}``.

``POST /checkout`` answers with this page's URL (the service created the session through
the stripe library, answered by ``sdk.stripe_dev``). ``GET`` shows what the session is for;
``POST`` pays it: the signed ``checkout.session.completed`` Stripe would send is posted to the
stack's own ``POST /webhooks/stripe`` and the answer is the success URL (the key claim).
Served by the local gateway only; a deployment has Stripe's real page instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from toolcall300.service.sdk.stripe_dev import DevStripe

PATH = "/dev/checkout"
_TARGET = re.compile(r"\A/dev/checkout/(cs_test_[0-9a-f]{48})\Z")

Answer = tuple[int, dict[str, str], bytes]
#: (method, target, headers, body) -> answer: the gateway's own routing, for the webhook post.
Forward = Callable[[str, str, list[tuple[str, str]], bytes], Answer]


def _json(status: int, body: object) -> Answer:
    return status, {"content-type": "application/json"}, json.dumps(body).encode()


def local_routes(
    dev: DevStripe, *, secret: str, forward: Forward
) -> Callable[[str, str, bytes], Answer | None]:
    """The gateway's ``local_routes`` hook serving the dev checkout page."""

    def serve(method: str, target: str, _body: bytes) -> Answer | None:
        if not target.startswith(PATH):
            return None
        found = _TARGET.match(target.split("?", 1)[0])
        if found is None:
            return _json(404, {"error": {"code": "not_found", "message": "no such checkout"}})
        session_id = found.group(1)
        if method == "GET":
            return _json(200, {"session_id": session_id, "pay": f"POST {PATH}/{session_id}"})
        if method != "POST":
            return _json(405, {"error": {"code": "method_not_allowed", "message": "GET or POST"}})
        paid = dev.pay(session_id, secret=secret)
        if paid is None:
            return _json(404, {"error": {"code": "not_found", "message": "no such checkout"}})
        payload, signature, success_url = paid
        headers = [("content-type", "application/json"), ("stripe-signature", signature)]
        status, _, data = forward("POST", "/webhooks/stripe", headers, payload)
        if status != 200:
            return status, {"content-type": "application/json"}, data
        return _json(200, {"session_id": session_id, "paid": True, "success_url": success_url})

    return serve
