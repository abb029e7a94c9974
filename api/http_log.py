"""The outermost ASGI layer (agentprocess/asgi.py): every HTTP request gets a request id and leaves
one log line (kernel/observe.py), whichever route answers it: REST, MCP or Django.

The id is the caller's X-Request-ID when it is a plain token (a proxy's `$request_id`), else a
fresh one; it goes back in the response's X-Request-ID and onto every line written while the
request is answered (the tool threads carry it too, api/threads.py).
"""

import time

from kernel import observe

_HEADER = observe.REQUEST_ID_HEADER.lower().encode()


def _incoming_id(scope) -> str | None:
    for key, value in scope["headers"]:
        if key == _HEADER:
            return value.decode("latin-1")
    return None


def with_request_log(app):
    async def logged(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        started = time.perf_counter()
        request_id = observe.request_id_from(_incoming_id(scope))
        header = (_HEADER, request_id.encode())
        status = None  # stays None when the client went away before any answer

        async def send_with_id(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", []), header]}
            await send(message)

        try:
            with observe.serving_request(request_id):
                await app(scope, receive, send_with_id)
        except BaseException:
            status = status or 500  # what the server answers for an app that failed
            raise
        finally:
            client = scope.get("client")
            observe.http_request(request_id=request_id, method=scope["method"], path=scope["path"], status=status,
                                 seconds=time.perf_counter() - started, client=client[0] if client else None)

    return logged
