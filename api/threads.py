"""Running the synchronous tool layer from the ASGI transports.

A small pool of worker threads, like a threaded WSGI server: each thread keeps its own Django
database connection (threads started by the pool run with their own contextvars, so Django's
connection storage is per thread), and every call is framed like a Django request, closing
connections that are broken or past CONN_MAX_AGE (with DB_POOL, closing returns the connection to
the pool). This replaces Django's ASGI handling of the hot REST path: its per-request thread
and several hand-offs cost more CPU than the tool call itself (bench/, issue 8).
"""

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor

from django.db import close_old_connections

from kernel import observe

_executor = ThreadPoolExecutor(max_workers=int(os.environ.get("TOOL_THREADS", "4")), thread_name_prefix="tools")


def _framed(function, args, request_id):
    close_old_connections()
    try:
        with observe.serving_request(request_id):  # the thread's lines carry the request's id
            return function(*args)
    finally:
        close_old_connections()


async def run_sync(function, *args):
    """Run `function(*args)` on a tool thread and await its result."""
    return await asyncio.get_running_loop().run_in_executor(_executor, _framed, function, args,
                                                            observe.current_request_id())
