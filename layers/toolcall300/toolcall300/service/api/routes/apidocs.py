"""``GET /openapi.json``: the service's OpenAPI document."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from toolcall300.service.api.openapi import document
from toolcall300.service.api.resolver import ConstantDocument, make_router, ok_response

router = make_router()
OPENAPI_PATH = "/openapi.json"


@router.get(
    OPENAPI_PATH,
    summary="This API's OpenAPI document",
    responses=ok_response(description="OpenAPI 3.1"),
    include_in_schema=False,
)
def openapi() -> Response[str]:
    return _DOCUMENT.response(router.current_event.headers)


#: Built once per process, with its ETag (a constant document).
_DOCUMENT = ConstantDocument(document, path=OPENAPI_PATH)
