"""``GET /dashboard``: the team baseline dashboard page (HTML under a hash-pinned CSP).

Loading the page needs no key; every data call the page makes carries the team's bearer key
(runs contract), so this route reads no licence and touches no table.
"""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from toolcall300.service.api.resolver import make_router
from toolcall300.service.domain.dashboard import page

router = make_router()


@router.get(
    "/dashboard",
    summary="The team baseline dashboard (a single HTML page; its data calls carry the key)",
    responses={
        200: {"description": "the page", "content": {"text/html": {"schema": {"type": "string"}}}}
    },
    tags=["dashboard"],
)
def dashboard() -> Response[str]:
    shipped = page()
    headers = {k: v for k, v in shipped.headers.items() if k != "Content-Type"}
    return Response(
        status_code=200,
        content_type=shipped.headers["Content-Type"],
        body=shipped.html,
        headers=headers,
    )
