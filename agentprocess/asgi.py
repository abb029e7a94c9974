"""The ASGI app: Django for everything, except /mcp (the MCP endpoint) and POST /api/v1/tools/<tool>
(the REST route, api.rest_asgi, same rules as the Django view).

Serve it with `uvicorn agentprocess.asgi:application` (any number of workers: MCP is stateless).
The ASGI lifespan must stay on (uvicorn's default): it starts the MCP SDK's session manager.
Static files are served by WhiteNoise inside Django's middleware, so they work here as well.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentprocess.settings")
# Set Django up before importing anything that touches models.
django_app = get_asgi_application()

from api.http_log import with_request_log  # noqa: E402
from api.mcp import MCP_PATH, build_mcp_app  # noqa: E402
from api.rest_asgi import rest_tool_app, tool_of  # noqa: E402

mcp_app = build_mcp_app()


async def dispatch(scope, receive, send):
    """A plain dispatcher rather than a Starlette Mount: a Mount would redirect /mcp to /mcp/ and
    skip the MCP app's lifespan. /.well-known/oauth-protected-resource/mcp stays with Django."""
    if scope["type"] == "lifespan":
        # Django does not speak lifespan; the SDK's session manager needs it to start.
        return await mcp_app(scope, receive, send)
    if scope["type"] == "http" and scope["path"] == MCP_PATH:
        return await mcp_app(scope, receive, send)
    tool = tool_of(scope)
    if tool is not None:  # the agents' hot path, without Django's request machinery
        return await rest_tool_app(scope, receive, send, tool)
    return await django_app(scope, receive, send)


# Every HTTP request: a request id (X-Request-ID) and one log line, whichever route answers it.
application = with_request_log(dispatch)
