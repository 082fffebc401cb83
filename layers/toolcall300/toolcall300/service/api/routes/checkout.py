"""``POST /checkout``: start a purchase, a Stripe Checkout Session the service creates itself.

The buyer names a product (``domain.products``) and, for a team, a display name; the service
sets the price, the metadata the webhook reads and, for a new team, the team's identity
(docs/tenancy.md). Sent with a team's purchase key, the checkout buys another seat of that
team instead; a member key may not (403 ``owner_only``). The answer is the hosted payment page to send the buyer to; its success URL is the
one-time key claim.
"""

from __future__ import annotations

import secrets
from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body
from pydantic import BaseModel, Field

from toolcall300.service.api import deps
from toolcall300.service.api.auth import bearer_key, require_licence
from toolcall300.service.api.resolver import (
    error_responses,
    make_router,
    ok_response,
    public_base_url,
)
from toolcall300.service.domain.licences import (
    TEAM_NAME_MAX,
    new_team_id,
    require_purchase_key,
    team_name_problem,
)
from toolcall300.service.domain.products import PRODUCTS, product_named
from toolcall300.service.errors import BadRequest
from toolcall300.service.observability import count
from toolcall300.service.sdk.stripe import create_checkout_session

router = make_router()


class CheckoutRequest(BaseModel):
    product: Annotated[str, Field(json_schema_extra={"enum": sorted(PRODUCTS)})]
    #: checked by the route, not here, so an unusable name is said back to the buyer.
    team_name: Annotated[str | None, Field(max_length=4 * TEAM_NAME_MAX)] = None


class CheckoutView(BaseModel):
    session_id: str
    checkout_url: str
    product: str
    amount: int
    currency: str
    team: str | None
    team_name: str | None


@router.post(
    "/checkout",
    summary="Start a purchase: the Stripe Checkout page for a product (a team key buys a seat)",
    responses={
        **ok_response(CheckoutView, "the checkout page"),
        **error_responses(400, 401, 403, 503),
    },
    tags=["licences"],
)
def checkout(request: Annotated[CheckoutRequest, Body()], served: deps.TheEdition) -> CheckoutView:
    product = product_named(request.product)
    if product is None:
        raise BadRequest(
            # quoted back at most 64 characters: the body may be 10 MB of product name
            f"unknown product {request.product[:64]!r}"
            f"{'...' if len(request.product) > 64 else ''}; one of {', '.join(sorted(PRODUCTS))}",
            code="unknown_product",
        )
    headers = router.current_event.headers
    team = team_name = None
    if product.needs_team and bearer_key(headers) is not None:
        seat_of = require_licence(headers, store=served.licences, tier="team")
        require_purchase_key(seat_of, to="buy seats")  # a member key buys nothing
        team, team_name = seat_of.team, seat_of.team_name
    elif product.needs_team:
        problem = team_name_problem(request.team_name)
        if problem is not None:
            raise BadRequest(
                f"the team name {request.team_name!r} cannot be used: {problem}",
                code="invalid_team_name",
            )
        team, team_name = new_team_id(), str(request.team_name).strip()
    purchase = "purchase-" + secrets.token_hex(12)
    metadata = {"product": product.product, "tier": product.tier, "purchase": purchase}
    if team is not None:
        metadata |= {"team_id": team, "team_name": team_name or ""}
    base = public_base_url(router.current_event.raw_event)
    session_id, url = create_checkout_session(
        product,
        api_key=served.stripe_api_key(),
        metadata=metadata,
        client_reference_id=team or purchase,
        success_url=f"{base}/licence/claim?session_id={{CHECKOUT_SESSION_ID}}",
        idempotency_key=purchase,
    )
    count("CheckoutsStarted")
    return CheckoutView(
        session_id=session_id,
        checkout_url=url,
        product=product.product,
        amount=product.amount,
        currency=product.currency,
        team=team,
        team_name=team_name,
    )
