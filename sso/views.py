"""Sign-in with an identity provider: the button's target starts the flow, the callback ends it
(sso/oidc.py checks the protocol, sso/signin.py decides who the person is). Every refusal is a page
saying what happened and what to do, with status 403, and signs nobody in."""

import logging

from django.conf import settings
from django.contrib.auth import login, logout
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from . import oidc, providers
from .signin import Refused, sign_in

log = logging.getLogger(__name__)
BACKEND = "sso.backends.ProviderBackend"
NEXT = "sso_next"
# Kept in the session after sign-in: which provider signed the person in, and its ID token (the
# hint of RP-initiated logout).
PROVIDER = "sso_provider"
ID_TOKEN = "sso_id_token"


def _provider(slug: str) -> providers.Provider:
    provider = providers.by_slug(slug)
    if provider is None:
        raise Http404("no such identity provider")
    return provider


def refused_page(request, provider, refusal: Refused):
    log.warning("oidc %s: sign-in refused: %s", provider.slug if provider else "-", refusal.code)
    return render(request, "sso/refused.html", {"provider": provider, "refusal": refusal}, status=403)


def _safe_next(request, target: str) -> str:
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                                  require_https=request.is_secure()):
        return target
    return "/"


@never_cache
@require_GET
def start(request, slug: str):
    provider = _provider(slug)
    request.session[NEXT] = _safe_next(request, request.GET.get("next", ""))
    try:
        return oidc.start(request, provider)
    except Refused as refusal:
        return refused_page(request, provider, refusal)


@never_cache
@require_GET
def callback(request, slug: str):
    provider = _provider(slug)
    try:
        claims, id_token = oidc.finish(request, provider)
        user = sign_in(provider, claims)
    except Refused as refusal:
        return refused_page(request, provider, refusal)
    target = request.session.pop(NEXT, "/")
    login(request, user, backend=BACKEND)
    request.session[PROVIDER] = provider.slug
    request.session[ID_TOKEN] = id_token
    return HttpResponseRedirect(_safe_next(request, target))


@never_cache
@require_POST
def sign_out(request):
    """Log out here (the session ends), then, for a person a provider signed in, at the provider too
    when its discovery document names an end_session_endpoint (RP-initiated logout with the ID
    token as hint); it sends the person back to the sign-in page. Back-channel logout is not
    offered: Authlib has no receiver for it."""
    provider = providers.by_slug(request.session.get(PROVIDER, ""))
    id_token = request.session.get(ID_TOKEN, "")
    logout(request)
    if provider is not None and id_token:
        if (target := oidc.logout_url(provider, id_token)) is not None:
            return HttpResponseRedirect(target)
    return HttpResponseRedirect(settings.LOGOUT_REDIRECT_URL)
