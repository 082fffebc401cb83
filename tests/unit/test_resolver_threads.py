"""Two requests handled at once never see each other's event (the local gateway serves its
functions from threads of one process; Powertools keeps the current event on a class)."""

from __future__ import annotations

import threading
from typing import Any

from toolcall300.service.api.resolver import make_resolver, make_router


def _event(who: str, path: str) -> dict[str, Any]:
    return {
        "version": "2.0",
        "routeKey": f"GET {path}",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {"x-who": who},
        "requestContext": {
            "http": {"method": "GET", "path": path, "sourceIp": "127.0.0.1"},
            "stage": "$default",
        },
        "isBase64Encoded": False,
    }


def _whoami(router: Any, both_inside: threading.Barrier) -> Any:
    def whoami() -> dict[str, str]:
        both_inside.wait()  # both requests have started: both events have been set
        return {"who": router.current_event.headers["x-who"]}

    return whoami


def test_concurrent_requests_to_two_functions_each_read_their_own_headers() -> None:
    both_inside = threading.Barrier(2, timeout=30)
    apps = {}
    for name in ("a", "b"):
        router = make_router()
        router.get(f"/{name}")(_whoami(router, both_inside))
        apps[name] = make_resolver(router)
    answers: dict[str, str] = {}

    def call(name: str) -> None:
        answers[name] = apps[name].resolve(_event(name, f"/{name}"), None)["body"]

    threads = [threading.Thread(target=call, args=(n,)) for n in apps]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == {"a": '{"who":"a"}', "b": '{"who":"b"}'}


def test_a_router_included_again_elsewhere_still_reads_its_own_request() -> None:
    """``openapi.document`` includes every router into one more resolver, after which the
    routers belong to it; a function's own resolver must still hand its routes their request."""
    router = make_router()
    router.get("/me")(lambda: {"who": router.current_event.headers["x-who"]})
    app = make_resolver(router)
    make_resolver(router)  # as the OpenAPI document does
    assert app.resolve(_event("me", "/me"), None)["body"] == '{"who":"me"}'
