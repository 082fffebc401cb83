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


def test_concurrent_invocations_each_log_their_own_request_and_correlation_ids() -> None:
    """Powertools' ``inject_lambda_context`` appends the request id and correlation id to the
    logger's one formatter, shared by every thread: two requests handled at once logged each
    other's ids. They are kept per thread (``service.observability``)."""
    import io
    import json
    import uuid

    from aws_lambda_powertools.logging import correlation_paths

    from toolcall300.service.local.httpapi import LambdaContext
    from toolcall300.service.observability import logger

    both_inside = threading.Barrier(2, timeout=30)
    after_first_log = threading.Barrier(2, timeout=30)

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
    def handler(event: dict[str, Any], _context: Any) -> None:
        both_inside.wait()  # both have appended their keys
        logger.info("inside", extra={"who": event["headers"]["x-who"]})
        after_first_log.wait()

    out = io.StringIO()
    stream = logger.registered_handler
    previous = stream.setStream(out)  # type: ignore[attr-defined]
    contexts = {
        name: LambdaContext(f"fn-{name}", aws_request_id=str(uuid.uuid4())) for name in "ab"
    }
    events = {
        name: {**_event(name, f"/{name}"), "requestContext": {"requestId": f"corr-{name}"}}
        for name in "ab"
    }
    try:
        threads = [
            threading.Thread(target=handler, args=(events[n], contexts[n])) for n in contexts
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        stream.setStream(previous)  # type: ignore[attr-defined]
    lines = [json.loads(line) for line in out.getvalue().splitlines() if '"inside"' in line]
    assert len(lines) == 2
    for line in lines:
        who = line["who"]
        assert line["function_request_id"] == contexts[who].aws_request_id
        assert line["correlation_id"] == f"corr-{who}"


def test_a_request_that_ends_while_another_to_the_same_function_is_inside_spoils_nothing() -> None:
    """One resolver serves every request to its function, from many gateway threads: the
    routing context Powertools keeps on the resolver (the matched route and its arguments,
    cleared when a request ends) is kept per thread. Shared, a request that ended while
    another was between routing and its handler cleared that one's route and arguments and it
    answered 500 (seen as ``KeyError: '_route_args'`` under ten concurrent ``POST /runs``)."""
    slow_inside, other_done = threading.Event(), threading.Event()
    router = make_router()

    def hold(app: Any, next_middleware: Any) -> Any:
        """Between routing and the handler, the slow request waits for the other to end."""
        if app.current_event.path.startswith("/slow/"):
            slow_inside.set()
            assert other_done.wait(30)
        return next_middleware(app)

    router.use([hold])
    router.get("/slow/<item>")(
        lambda item: {"item": item, "who": router.current_event.headers["x-who"]}
    )
    router.get("/quick/<item>")(lambda item: {"item": item})
    app = make_resolver(router)
    answers: dict[str, dict[str, Any]] = {}

    def call(name: str, path: str) -> None:
        answers[name] = app.resolve(_event(name, path), None)

    slow_call = threading.Thread(target=call, args=("slow", "/slow/s1"))
    slow_call.start()
    assert slow_inside.wait(30)
    call("quick", "/quick/q1")
    other_done.set()
    slow_call.join()
    assert {k: (v["statusCode"], v["body"]) for k, v in answers.items()} == {
        "quick": (200, '{"item":"q1"}'),
        "slow": (200, '{"item":"s1","who":"slow"}'),
    }


def test_a_requests_headers_are_read_into_one_case_insensitive_map() -> None:
    seen: list[Any] = []
    router = make_router()

    @router.get("/twice")
    def twice() -> dict[str, str]:
        seen.extend([router.current_event.headers, router.current_event.headers])
        return {}

    make_resolver(router).resolve(_event("Ann", "/twice"), None)
    first, second = seen
    assert first is second  # built once for the request, not at every read
    assert first.get("X-WHO") == first["x-who"] == "Ann"
