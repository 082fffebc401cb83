"""Powertools routers, one module per concern; each function's ``app.py`` includes one.

Routers live in the layer (not in ``functions/``) so ``functions/apidocs`` can include them
all to serve one OpenAPI document. Keep handlers thin: parse, authenticate, one domain call.
"""

#: Router modules whose routes appear in /openapi.json. Another concern adds its module here.
OPENAPI_ROUTERS = [
    "toolcall300.service.api.routes.webhook",
    "toolcall300.service.api.routes.licences",
    "toolcall300.service.api.routes.checkout",
    "toolcall300.service.api.routes.corpus",
    "toolcall300.service.api.routes.argcheck",
    "toolcall300.service.api.routes.dashboard",
    "toolcall300.service.api.routes.runs",
    "toolcall300.service.api.routes.badges",
]
