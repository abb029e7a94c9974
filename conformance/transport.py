"""The two ways the runner speaks to a server: MCP through the official SDK client (Streamable HTTP
at /mcp) and REST through plain HTTP (POST /api/v1/tools/<tool>). Both hand back the envelope and
any problem with how it was carried."""

import asyncio
import contextlib
import json
import threading
import urllib.error
import urllib.request
from concurrent.futures import Future
from decimal import Decimal

TIMEOUT_SECONDS = 60


def dumps_exact(value) -> str:
    """JSON text with every Decimal written digit for digit (json.dumps would refuse it, and a float
    would round it): the runner's way to send 1.23456789012345678901 or 1e400 as a JSON number."""
    numbers: list[str] = []

    def mark(item):
        if isinstance(item, Decimal):
            numbers.append(str(item))
            return f"@@conformance-number-{len(numbers) - 1}@@"
        if isinstance(item, dict):
            return {k: mark(v) for k, v in item.items()}
        if isinstance(item, list):
            return [mark(v) for v in item]
        return item

    text = json.dumps(mark(value))
    for index, number in enumerate(numbers):
        text = text.replace(f'"@@conformance-number-{index}@@"', number, 1)
    return text


class RestTransport:
    """Plain HTTP: the runner writes and reads the JSON itself, so a number travels exactly (a
    fraction is read as a Decimal, never as a binary float)."""

    name = "rest"
    exact_numbers = True

    def __init__(self, base_url: str):
        self.base_url = base_url.rstrip("/")

    def call(self, token: str, tool: str, arguments: dict) -> tuple[object, list[str]]:
        request = urllib.request.Request(
            f"{self.base_url}/api/v1/tools/{tool}", data=dumps_exact(arguments).encode(), method="POST",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                     "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
                body = response.read()
        except urllib.error.HTTPError as error:  # every refusal still carries its envelope
            body = error.read()
        try:
            return json.loads(body, parse_float=Decimal), []
        except ValueError:
            return None, [f"REST answer is not JSON: {body[:200]!r}"]

    def close(self):
        pass


class McpTransport:
    """One SDK client session per token, each living in its own task on a private event loop
    (the SDK's task groups must be entered and left in the same task), fed through a queue so the
    scenarios stay plain synchronous code."""

    name = "mcp"
    exact_numbers = False  # the SDK client carries numbers as binary floats both ways

    def __init__(self, base_url: str):
        self.url = base_url.rstrip("/") + "/mcp"
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="conformance-mcp", daemon=True)
        self.thread.start()
        self.sessions: dict[str, asyncio.Queue] = {}
        self.workers: list[Future] = []

    def call(self, token: str, tool: str, arguments: dict) -> tuple[object, list[str]]:
        reply: Future = Future()
        self.loop.call_soon_threadsafe(self._enqueue, token, (tool, arguments, reply))
        return reply.result(timeout=TIMEOUT_SECONDS * 2)

    def _enqueue(self, token: str, job):
        if token not in self.sessions:
            self.sessions[token] = asyncio.Queue()
            self.workers.append(asyncio.run_coroutine_threadsafe(self._serve(token, self.sessions[token]), self.loop))
        self.sessions[token].put_nowait(job)

    async def _serve(self, token: str, queue: asyncio.Queue):
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        try:
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT_SECONDS)
            async with http, Client(streamable_http_client(self.url, http_client=http)) as client:
                while True:
                    job = await queue.get()
                    if job is None:
                        return
                    tool, arguments, reply = job
                    try:
                        reply.set_result(await self._call(client, tool, arguments))
                    except Exception as error:  # noqa: BLE001 - a transport failure is the answer
                        reply.set_result((None, [f"MCP call failed: {type(error).__name__}: {error}"]))
        except Exception as error:  # noqa: BLE001 - the session could not open: answer every waiting job
            while not queue.empty():
                job = queue.get_nowait()
                if job is not None:
                    job[2].set_result((None, [f"MCP session failed: {type(error).__name__}: {error}"]))
            self.sessions.pop(token, None)

    @staticmethod
    async def _call(client, tool: str, arguments: dict):
        result = await client.call_tool(tool, arguments)
        envelope = result.structured_content
        problems = []
        texts = [part.text for part in result.content if getattr(part, "type", None) == "text"]
        if envelope is None and texts:
            try:
                envelope = json.loads(texts[0])
            except ValueError:
                pass
            problems.append("the tool result has no structuredContent")
        if not texts:
            problems.append("the tool result has no JSON text content beside structuredContent")
        elif envelope is not None:
            try:
                if json.loads(texts[0]) != envelope:
                    problems.append("the JSON text content differs from structuredContent")
            except ValueError:
                problems.append("the text content is not JSON")
        if isinstance(envelope, dict) and isinstance(envelope.get("ok"), bool) and result.is_error is not (
                not envelope["ok"]):
            problems.append(f"isError is {result.is_error} on an envelope with ok {envelope['ok']}")
        return envelope, problems

    def close(self):
        for queue in list(self.sessions.values()):
            self.loop.call_soon_threadsafe(queue.put_nowait, None)
        for worker in self.workers:
            with contextlib.suppress(Exception):  # closing: nothing more to report
                worker.result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


def make_transport(kind: str, base_url: str):
    return {"mcp": McpTransport, "rest": RestTransport}[kind](base_url)
