"""The local stack's stand-in for Stripe's hosted checkout page: ``/dev/checkout/{session}``.

``POST /checkout`` answers with this page's URL (the service created the session through
the stripe library, answered by ``sdk.stripe_dev``). ``GET`` is a test-mode checkout page for
a browser: what the session buys, its amount, and a Pay button. ``POST`` pays it: the signed
``checkout.session.completed`` Stripe would send is posted to the stack's own ``POST
/webhooks/stripe`` (the same signed-event path as a real payment); a JSON client gets the
success URL (the key claim) as JSON, the page's form gets a page linking to it. Served by the
local gateway only, and only where free test purchases are allowed (``stack``: a loopback
``--host`` unless ``serve --dev-checkout``); a deployment has Stripe's real page instead.
"""

from __future__ import annotations

import base64
import hashlib
import html
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


#: The page's only style; the CSP allows exactly it (by hash), no script at all.
_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;"
    "color:#111827}.mode{background:#fef3c7;color:#92400e;padding:.4rem .7rem;border-radius:.4rem;"
    "display:inline-block;font-weight:600}dl{display:grid;grid-template-columns:auto 1fr;"
    "gap:.4rem 1rem}dt{font-weight:600}dd{margin:0}button{font-size:1.1rem;padding:.6rem 1.6rem;"
    "background:#1d4ed8;color:#fff;border:0;border-radius:.4rem;cursor:pointer}"
)
_CSP = (
    "default-src 'none'; img-src data:; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'; "
    "style-src 'sha256-" + base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode() + "'"
)
#: What the page's form posts: how a payment from the page is told from a JSON client's.
FORM_FIELD = b"pay=test"


def _page(status: int, title: str, body: str) -> Answer:
    doc = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'  # no favicon request to a route that has none
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f'<p class="mode">Test mode: no real payment</p><h1>{html.escape(title)}</h1>{body}'
        "</body></html>"
    )
    headers = {
        "content-type": "text/html; charset=utf-8",
        "content-security-policy": _CSP,
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
        "cache-control": "no-store",
    }
    return status, headers, doc.encode("utf-8")


def _amount(session: dict[str, object]) -> str:
    total = session.get("amount_total")
    cents = total if isinstance(total, int) else 0
    return f"{cents // 100}.{cents % 100:02d} {str(session.get('currency', '')).upper()}"


def checkout_page(session_id: str, session: dict[str, object]) -> Answer:
    """The test-mode checkout page: what the session buys and a Pay button (a form, no script)."""
    meta = session.get("metadata")
    facts = meta if isinstance(meta, dict) else {}
    rows = [("Product", str(facts.get("product", "?"))), ("Amount", _amount(session))]
    if facts.get("team_name"):
        rows.append(("Team", str(facts["team_name"])))
    rows.append(("Session", session_id))
    listed = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in rows)
    if session.get("payment_status") == "paid":
        action = "<p>This session is already paid.</p>"
    else:
        action = (
            f'<form method="post" action="{PATH}/{session_id}">'
            f'<input type="hidden" name="pay" value="test"><button type="submit">Pay '
            f"{html.escape(_amount(session))}</button></form>"
        )
    return _page(200, "TOOLCALL-300 checkout", f"<dl>{listed}</dl>{action}")


def paid_page(success_url: str) -> Answer:
    """After the Pay button: the purchase is complete; the licence key is claimed once."""
    link = html.escape(success_url, quote=True)
    body = (
        "<p>Payment complete. Your licence key is shown once, at its claim link:</p>"
        f'<p><a id="claim" href="{link}">Claim your licence key</a></p>'
    )
    return _page(200, "Paid", body)


def local_routes(
    dev: DevStripe, *, secret: str, forward: Forward
) -> Callable[[str, str, bytes], Answer | None]:
    """The gateway's ``local_routes`` hook serving the dev checkout page."""

    def serve(method: str, target: str, body: bytes) -> Answer | None:
        if not target.startswith(PATH):
            return None
        found = _TARGET.match(target.split("?", 1)[0])
        if found is None:
            return _json(404, {"error": {"code": "not_found", "message": "no such checkout"}})
        session_id = found.group(1)
        if method == "GET":
            session = dev.session(session_id)
            if session is None:
                return _page(
                    404, "No such checkout", "<p>This checkout session does not exist.</p>"
                )
            return checkout_page(session_id, session)
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
        if body.strip() == FORM_FIELD:  # the page's Pay button
            return paid_page(success_url)
        return _json(200, {"session_id": session_id, "paid": True, "success_url": success_url})

    return serve
