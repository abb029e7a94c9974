"""The OpenID Connect relying party: Authlib does the protocol (issue 25, point 1).

Why Authlib (of mozilla-django-oidc, Authlib and django-allauth):
- discovery: Authlib reads `<issuer>/.well-known/openid-configuration` itself (`server_metadata_url`);
  mozilla-django-oidc wants every endpoint configured by hand, one provider per settings module;
- PKCE: S256 with a fresh verifier per flow, kept with `state` and `nonce` in the session and
  dropped on first use, so a replayed `state` or code finds nothing;
- key rotation: the JWKS is fetched from the discovery document's `jwks_uri`, cached with the
  metadata in the process, and fetched again when a token names a key id the cache lacks, so a
  provider that rotates its keys is followed without a restart;
- logout: the discovery document's `end_session_endpoint` gives RP-initiated logout
  (`create_logout_url`, with `id_token_hint`);
- several providers side by side, each its own client, with no models, pages or account flows
  of its own (django-allauth brings all three and would replace our sign-in and people pages).

What is checked (Authlib and joserfc): `state` against the session; the code exchanged once with
the PKCE verifier; the ID token's signature with a key of the provider's JWKS and an algorithm its
discovery document lists; `iss` equal to the discovered issuer; `aud` containing our client id;
`exp` (two minutes of clock skew allowed, Authlib's default) and `nonce` equal to the one sent.
Every failure becomes `signin.Refused` with a code (the page says what to do).
"""

import logging
import threading

import requests
from authlib.integrations.base_client import MismatchingStateError, OAuthError
from authlib.integrations.django_client import OAuth
from django.conf import settings
from joserfc import errors as jose

from .providers import Provider
from .signin import Refused

log = logging.getLogger(__name__)

_clients: dict[Provider, object] = {}
_lock = threading.Lock()


def client(provider: Provider):
    """Authlib's client for this provider, one per process (it caches the discovery document and the
    JWKS); a changed setting is a different Provider and so a new client."""
    with _lock:
        found = _clients.get(provider)
        if found is None:
            registry = OAuth()
            found = registry.register(
                name=f"oidc_{provider.slug}", client_id=provider.client_id, client_secret=provider.client_secret or None,
                server_metadata_url=provider.discovery_url,
                client_kwargs={"scope": provider.scopes, "code_challenge_method": "S256",
                               "default_timeout": settings.OIDC_TIMEOUT,
                               **({} if provider.client_secret else {"token_endpoint_auth_method": "none"})})
            _clients[provider] = found
        return found


def redirect_uri(provider: Provider) -> str:
    """Where the provider sends people back: registered with the provider as exactly this, built from
    PUBLIC_BASE_URL (never from a request's Host header)."""
    return f"{settings.PUBLIC_BASE_URL}/accounts/oidc/{provider.slug}/callback/"


def start(request, provider: Provider):
    """The redirect to the provider's authorization endpoint (state, nonce and the PKCE verifier
    kept in the session)."""
    app = client(provider)
    try:
        issuer = str(app.load_server_metadata().get("issuer") or "").rstrip("/")
    except (requests.RequestException, ValueError) as error:
        log.warning("oidc %s: discovery failed: %s", provider.slug, error)
        raise _unreachable(provider) from error
    if issuer != provider.issuer:  # OpenID Connect Discovery §4.3: the document names its own issuer
        log.warning("oidc %s: discovery names the issuer %r, not %r", provider.slug, issuer, provider.issuer)
        raise Refused("wrong_issuer", f"{provider.name} is set up wrongly here (its discovery document names "
                                      "another issuer). Tell your administrator.")
    return app.authorize_redirect(request, redirect_uri(provider))


def _unreachable(provider: Provider) -> Refused:
    return Refused("provider_unreachable", f"{provider.name} could not be reached just now. Try again in a "
                                           "minute; if it keeps failing, tell your administrator.")


def _answer_not_verified(provider: Provider, code: str, what: str) -> Refused:
    return Refused(code, f"{provider.name}'s answer could not be verified ({what}), so you were not signed in. "
                         "Start again; if it happens again, tell your administrator.")


_CLAIMS = {"nonce": ("wrong_nonce", "it was meant for another sign-in"),
           "aud": ("wrong_audience", "it was meant for another application"),
           "iss": ("wrong_issuer", "it came from another issuer"),
           "azp": ("wrong_audience", "it was meant for another application")}


def finish(request, provider: Provider) -> tuple[dict, str]:
    """The verified claims of the ID token of this callback and the raw ID token; Refused otherwise."""
    app = client(provider)
    try:
        token = app.authorize_access_token(request)
    except MismatchingStateError as error:
        raise Refused("wrong_state", "This sign-in was not started in this browser, or it was already used. "
                                     "Start again from the sign-in page.") from error
    except OAuthError as error:
        if request.GET.get("error"):
            raise Refused("provider_refused", f"{provider.name} did not sign you in ({error.error}). Start again; "
                                              "if it keeps happening, tell your administrator.") from error
        log.warning("oidc %s: token exchange refused: %s", provider.slug, error)
        raise Refused("code_refused", f"{provider.name} did not accept this sign-in (its code was already used "
                                      "or has expired). Start again from the sign-in page.") from error
    except jose.InvalidKeyIdError as error:
        raise _answer_not_verified(provider, "unknown_key", "it was signed with a key the provider does not "
                                                            "publish") from error
    except jose.ExpiredTokenError as error:
        raise _answer_not_verified(provider, "expired", "it had expired") from error
    except jose.ClaimError as error:
        code, what = _CLAIMS.get(error.claim, ("invalid_token", f"its {error.claim} claim is wrong"))
        raise _answer_not_verified(provider, code, what) from error
    except jose.BadSignatureError as error:
        raise _answer_not_verified(provider, "bad_signature", "its signature does not match") from error
    except jose.JoseError as error:
        raise _answer_not_verified(provider, "invalid_token", error.error) from error
    except requests.RequestException as error:
        log.warning("oidc %s: provider unreachable: %s", provider.slug, error)
        raise _unreachable(provider) from error
    if "userinfo" not in token or "id_token" not in token:
        raise _answer_not_verified(provider, "no_id_token", "it carried no ID token")
    return dict(token["userinfo"]), token["id_token"]


def logout_url(provider: Provider, id_token: str) -> str | None:
    """The provider's end-session URL for RP-initiated logout, back to our sign-in page; None when
    the provider offers none (or cannot be reached: the session here has ended anyway)."""
    try:
        metadata = client(provider).load_server_metadata()
        if not metadata.get("end_session_endpoint"):
            return None
        return client(provider).create_logout_url(
            post_logout_redirect_uri=f"{settings.PUBLIC_BASE_URL}{settings.LOGOUT_REDIRECT_URL}",
            id_token_hint=id_token, client_id=provider.client_id)["url"]
    except (requests.RequestException, ValueError, RuntimeError) as error:
        log.warning("oidc %s: no logout at the provider: %s", provider.slug, error)
        return None
