"""/healthz, /readyz and /metrics (issue 22, points 2 and 3), answered by the first middleware.

First, so that nothing a load balancer or Prometheus cannot satisfy stands in the way: no session,
no CSRF, no redirect to https (the checker talks plain http to the web host), and no ALLOWED_HOSTS
check (it calls the host by its address: `Host: 10.0.0.11:8000`). None of the three answers
depends on the Host or builds a link from it, and none carries a secret.

- /healthz: the process answers; touches nothing else. Always 200.
- /readyz: the database (reachable, every migration applied), the broker (Redis, when configured)
  and the file storage (a small file written and deleted): 200 when all pass, else 503 naming the
  failing checks (kernel/readiness.py).
- /metrics: Prometheus text. Open to loopback by default (to a direct connection only: a request
  that came through a proxy, with X-Forwarded-For, is not a loopback caller), or to the addresses
  and networks of METRICS_ALLOW instead, or to a caller presenting METRICS_TOKEN as a bearer token;
  anyone else gets 403, or 401 when a token is configured, and no data.
"""

import hmac
import ipaddress

from django.conf import settings
from django.http import HttpResponse, JsonResponse

from kernel import clock, metrics, readiness
from runs.services import gauges

HEALTHZ, READYZ, METRICS = "/healthz", "/readyz", "/metrics"
LOOPBACK = (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128"))
NO_STORE = {"Cache-Control": "no-store"}
FORBIDDEN = "forbidden: /metrics is open to loopback or METRICS_ALLOW, or with METRICS_TOKEN\n"
UNAUTHORIZED = "unauthorized: send METRICS_TOKEN as a bearer token\n"


def healthz(request) -> HttpResponse:
    return JsonResponse({"status": "ok"}, headers=NO_STORE)


def readyz(request) -> HttpResponse:
    verdict = readiness.readiness()
    return JsonResponse(verdict, status=200 if verdict["status"] == readiness.OK else 503, headers=NO_STORE)


def _address(text: str | None):
    try:
        address = ipaddress.ip_address((text or "").split("%", 1)[0])
    except ValueError:
        return None
    return address.ipv4_mapped or address if address.version == 6 else address


def _proxied(request) -> bool:
    return "HTTP_X_FORWARDED_FOR" in request.META or "HTTP_FORWARDED" in request.META


def _bearer(request) -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def metrics_refusal(request) -> HttpResponse | None:
    """None when the caller may read /metrics, else the answer that says no (without data)."""
    address = _address(request.META.get("REMOTE_ADDR"))
    allowed = settings.METRICS_ALLOW
    if allowed is None:  # the default: loopback, connected directly
        allowed = () if _proxied(request) else LOOPBACK
    if address is not None and any(address in network for network in allowed):
        return None
    token = settings.METRICS_TOKEN
    if not token:
        return HttpResponse(FORBIDDEN, status=403, content_type="text/plain; charset=utf-8", headers=NO_STORE)
    presented = _bearer(request)
    if presented is not None and hmac.compare_digest(presented.encode(), token.encode()):
        return None
    return HttpResponse(UNAUTHORIZED, status=401, content_type="text/plain; charset=utf-8",
                        headers={**NO_STORE, "WWW-Authenticate": 'Bearer realm="metrics"'})


def _workload() -> metrics.Workload:
    # On a thread of its own with a deadline: a database that hangs costs a scrape 3 s and reports
    # agentprocess_database_up 0, rather than the scrape timing out with every other metric.
    return readiness.bounded("workload", lambda: gauges.workload(clock.now()))


def metrics_page(request) -> HttpResponse:
    refusal = metrics_refusal(request)
    if refusal is not None:
        return refusal
    return HttpResponse(metrics.exposition(metrics.WorkloadCollector(_workload)), content_type=metrics.CONTENT_TYPE,
                        headers=NO_STORE)


PAGES = {HEALTHZ: healthz, READYZ: readyz, METRICS: metrics_page}


class HealthMiddleware:
    """Answers the three paths before any other middleware; everything else passes through."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        page = PAGES.get(request.path_info)
        if page is None:
            return self.get_response(request)
        if request.method not in ("GET", "HEAD"):
            return HttpResponse("only GET\n", status=405, content_type="text/plain; charset=utf-8",
                                headers={"Allow": "GET, HEAD"})
        return page(request)
