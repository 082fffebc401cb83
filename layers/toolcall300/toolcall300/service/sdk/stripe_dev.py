"""A local stand-in for Stripe: Checkout Sessions kept in memory, paid on a dev checkout page.

A local stack has no Stripe account, so it installs :class:`DevStripe` as the stripe library's
HTTP client (``stripe.default_http_client``): the service's own calls (``POST /checkout``
creating a session, the webhook retrieving one) go through the real library and land here
instead of on the network. :meth:`DevStripe.pay` is what Stripe's hosted page does when the
buyer pays: it marks the session paid and returns the signed ``checkout.session.completed``
event Stripe would send, for the local stack to post to its own webhook. Local stacks only.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlsplit

import stripe

_SESSIONS = "/v1/checkout/sessions"


def _nest(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """Stripe's form encoding (``a[b][0][c]=v``) back into nested dicts and lists."""
    root: dict[str, Any] = {}
    for key, value in pairs:
        parts = re.findall(r"[^\[\]]+", key)
        node: Any = root
        for here in parts[:-1]:
            node = node.setdefault(here, {})
        node[parts[-1]] = value
    return root


def _listify(node: Any) -> Any:
    if isinstance(node, dict):
        if node and all(k.isdigit() for k in node):
            return [_listify(node[k]) for k in sorted(node, key=int)]
        return {k: _listify(v) for k, v in node.items()}
    return node


def _error(status: int, message: str) -> tuple[str, int, Mapping[str, str]]:
    body = {"error": {"type": "invalid_request_error", "message": message}}
    return json.dumps(body), status, {"Content-Type": "application/json"}


class Sessions(Protocol):
    """Where the sessions are kept: this process's memory (:class:`MemorySessions`), or the
    state folder's database, which every process of a local stack shares
    (``statefolder.sqlite.SqliteDocuments``)."""

    def get(self, key: str) -> dict[str, Any] | None: ...
    def put(self, key: str, item: dict[str, Any]) -> None: ...
    def change(
        self, key: str, change: Callable[[dict[str, Any]], None]
    ) -> dict[str, Any] | None: ...


class MemorySessions:
    def __init__(self) -> None:
        self._items: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            found = self._items.get(key)
            return dict(found) if found is not None else None

    def put(self, key: str, item: dict[str, Any]) -> None:
        with self._lock:
            self._items[key] = dict(item)

    def change(self, key: str, change: Callable[[dict[str, Any]], None]) -> dict[str, Any] | None:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            change(found)
            return dict(found)


class DevStripe(stripe.HTTPClient):
    """Answers the Stripe API calls the service makes, with Stripe's shapes, from ``sessions``."""

    name = "toolcall300-dev"

    def __init__(self, page_url: str, sessions: Sessions | None = None) -> None:
        super().__init__()
        self._page_url = page_url.rstrip("/")
        self._sessions: Sessions = sessions if sessions is not None else MemorySessions()

    def request(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str] | None,
        post_data: Any = None,
        *,
        _usage: list[str] | None = None,
    ) -> tuple[str, int, Mapping[str, str]]:
        path = urlsplit(url).path
        if method == "post" and path == _SESSIONS:
            form = post_data.decode() if isinstance(post_data, bytes) else str(post_data or "")
            session = self._create(_listify(_nest(parse_qsl(form, keep_blank_values=True))))
            return json.dumps(session), 200, {"Content-Type": "application/json"}
        if method == "get" and path.startswith(_SESSIONS + "/"):
            found = self._sessions.get(path.rsplit("/", 1)[1])
            if found is None:
                return _error(404, "No such checkout.session")
            return json.dumps(found), 200, {"Content-Type": "application/json"}
        return _error(404, f"the local stand-in does not serve {method.upper()} {path}")

    def close(self) -> None:
        return None

    def _create(self, form: dict[str, Any]) -> dict[str, Any]:
        items = form.get("line_items") or []
        amount = sum(int(i["price_data"]["unit_amount"]) * int(i.get("quantity", 1)) for i in items)
        session_id = "cs_test_" + secrets.token_hex(24)
        session = {
            "id": session_id,
            "object": "checkout.session",
            "mode": form.get("mode", "payment"),
            "status": "open",
            "payment_status": "unpaid",
            "payment_intent": None,
            "amount_subtotal": amount,
            "amount_total": amount,
            "currency": items[0]["price_data"]["currency"] if items else "eur",
            "metadata": form.get("metadata") or {},
            "client_reference_id": form.get("client_reference_id"),
            "success_url": form.get("success_url"),
            "url": f"{self._page_url}/{session_id}",
            "created": int(time.time()),
            "livemode": False,
        }
        self._sessions.put(session_id, session)
        return session

    def session(self, session_id: str) -> dict[str, Any] | None:
        """A copy of one session as created (what the test-mode checkout page shows), or None."""
        return self._sessions.get(session_id)

    def pay(self, session_id: str, *, secret: str) -> tuple[bytes, str, str] | None:
        """The buyer pays: (signed event body, its ``Stripe-Signature``, the success URL)."""

        def paying(session: dict[str, Any]) -> None:
            session.update(
                status="complete",
                payment_status="paid",
                payment_intent=session["payment_intent"] or "pi_" + secrets.token_hex(12),
            )

        paid = self._sessions.change(session_id, paying)
        if paid is None:
            return None
        now = int(time.time())
        event = {
            "id": "evt_" + secrets.token_hex(12),
            "object": "event",
            "api_version": "2024-06-20",
            "created": now,
            "livemode": False,
            "pending_webhooks": 1,
            "request": {"id": None, "idempotency_key": None},
            "type": "checkout.session.completed",
            "data": {"object": paid},
        }
        payload = json.dumps(event, separators=(",", ":"))
        header = stripe.WebhookSignature.generate_signature_header(payload, secret, timestamp=now)
        success = str(paid.get("success_url") or "").replace("{CHECKOUT_SESSION_ID}", session_id)
        return payload.encode(), header, success


def install(page_url: str, sessions: Sessions | None = None) -> tuple[DevStripe, Any]:
    """Make the stripe library talk to a new :class:`DevStripe`; returns it and what it replaced."""
    dev = DevStripe(page_url, sessions)
    previous = stripe.default_http_client
    stripe.default_http_client = dev
    return dev, previous


def uninstall(previous: Any) -> None:
    stripe.default_http_client = previous
