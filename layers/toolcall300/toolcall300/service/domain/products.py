"""What the service sells: each product, the licence tier it grants and its configured price.

The one table both ends of a purchase read (docs/tenancy.md, "Buying"): ``POST /checkout``
asks Stripe for a Checkout Session at the product's amount and currency, and the webhook
issues a licence only when the paid session's amount and currency are exactly the product's
(a signed session for 1 JPY naming ``team`` issues nothing). A new product is one more entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolcall300.argcheck.criteria import CURRENCY, PACK_AMOUNT, PACK_CHECKS, PACK_PRODUCT


@dataclass(frozen=True)
class Product:
    """One thing a buyer can check out: the tier it grants, its price (minor units) and name."""

    product: str
    tier: str
    amount: int
    currency: str
    name: str
    needs_team: bool = False


#: The product spec's prices: EUR 29 for a single licence, EUR 99 for a team (CI) licence;
#: the criteria's $0.02 a check as a pack.
PRODUCTS: Mapping[str, Product] = {
    p.product: p
    for p in (
        Product("single", "single", 2900, "eur", "TOOLCALL-300 single licence"),
        Product("team", "team", 9900, "eur", "TOOLCALL-300 team licence (CI)", needs_team=True),
        # The argument checker's $0.02 a check, prepaid (criteria D23, docs/argcheck-payment.md):
        # a key of tier "checks" that pays for checks only (no corpus, no hosted runs).
        Product(
            PACK_PRODUCT,
            "checks",
            PACK_AMOUNT,
            CURRENCY,
            f"TOOLCALL-300 argument checks: {PACK_CHECKS} checks at $0.02",
        ),
    )
}


def product_named(name: object) -> Product | None:
    """The product called ``name``, or None (an unknown product is never a default one)."""
    return PRODUCTS.get(name) if isinstance(name, str) else None


def paid_mismatch(product: Product, session: Mapping[str, Any]) -> str | None:
    """Why a paid session does not pay for ``product`` (None when amount and currency match).

    Stripe reports ``amount_total`` in the currency's minor unit and ``currency`` lower-case.
    """
    amount, currency = session.get("amount_total"), session.get("currency")
    if type(amount) is not int or amount != product.amount:
        return f"amount_total {amount!r} is not {product.amount}"
    if not isinstance(currency, str) or currency.lower() != product.currency:
        return f"currency {currency!r} is not {product.currency}"
    return None
