"""A real OpenID Connect provider for the tests (issue 25): django-oauth-toolkit's OIDC provider in a
Django project of its own, run as a second server process (its own SQLite database, its own signing
key), the way an organization's identity provider stands beside this server.

    python -m tests.support.oidc_provider --port P --folder F

F holds `directory.json` (the provider's people: password, email, groups; read again on every
token request, so a test changes a person's groups at the provider by rewriting it) and
`key.pem` (the RSA key it signs ID tokens with; a restart with a new key is a key rotation).

`directory.json` may give a person a "misbehave" word, making the provider lie in that person's
ID token so the relying party's checks are tested against a real token endpoint: "nonce" (another
nonce), "audience" (another client's aud), "expired" (exp an hour ago), "unknown_key" (signed with
a key its JWKS does not publish).

`ProviderProcess` (below) starts and stops it from a test.
"""

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

CLIENT_ID = "agentprocess-test"
CLIENT_SECRET = "test-client-secret-0123456789"
LOGIN_TEMPLATE = """<!doctype html><html lang="en"><head><title>Test IdP sign-in</title></head><body>
<h1>Test identity provider</h1>
<form method="post">{% csrf_token %}
<label for="id_username">Username</label><input id="id_username" name="username">
<label for="id_password">Password</label><input id="id_password" name="password" type="password">
<input type="hidden" name="next" value="{{ next }}">
<button type="submit">Sign in at the provider</button></form></body></html>"""


def rsa_key_pem() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def _configure(port: int, folder: Path, redirect_uri: str, post_logout_uri: str) -> None:
    import django
    from django.conf import settings

    issuer = f"http://127.0.0.1:{port}/o"
    settings.configure(
        DEBUG=False, SECRET_KEY="test-provider-" + "x" * 50, ALLOWED_HOSTS=["127.0.0.1", "localhost"],
        ROOT_URLCONF=__name__, USE_TZ=True,
        INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "django.contrib.sessions",
                        "oauth2_provider"],
        MIDDLEWARE=["django.contrib.sessions.middleware.SessionMiddleware",
                    "django.middleware.csrf.CsrfViewMiddleware",
                    "django.contrib.auth.middleware.AuthenticationMiddleware"],
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(folder / "provider.sqlite3")}},
        TEMPLATES=[{"BACKEND": "django.template.backends.django.DjangoTemplates", "OPTIONS": {
            "loaders": [("django.template.loaders.locmem.Loader", {"registration/login.html": LOGIN_TEMPLATE})],
            "context_processors": ["django.template.context_processors.request"]}}],
        PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
        LOGIN_URL="/login/", DEFAULT_AUTO_FIELD="django.db.models.AutoField",
        # Cookies are per host, not per port: these must not overwrite the relying party's on 127.0.0.1.
        SESSION_COOKIE_NAME="idp_sessionid", CSRF_COOKIE_NAME="idp_csrftoken",
        OAUTH2_PROVIDER={
            "OIDC_ENABLED": True, "OIDC_RSA_PRIVATE_KEY": (folder / "key.pem").read_text(),
            "OIDC_ISS_ENDPOINT": issuer, "OIDC_RP_INITIATED_LOGOUT_ENABLED": True,
            "OIDC_RP_INITIATED_LOGOUT_ALWAYS_PROMPT": False,
            "PKCE_REQUIRED": True, "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https"],
            "SCOPES": {"openid": "OpenID Connect", "email": "Email", "profile": "Profile"},
            "OAUTH2_VALIDATOR_CLASS": f"{__name__}.Validator",
        },
        PROVIDER_FOLDER=str(folder),
    )
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    _load_directory(redirect_uri, post_logout_uri)


def _directory() -> dict:
    from django.conf import settings

    return json.loads((Path(settings.PROVIDER_FOLDER) / "directory.json").read_text())


def _load_directory(redirect_uri: str, post_logout_uri: str) -> None:
    from django.contrib.auth.models import User
    from oauth2_provider.models import Application

    for username, person in _directory().items():
        user, _created = User.objects.get_or_create(username=username)
        user.set_password(person["password"])
        user.save()
    Application.objects.filter(client_id=CLIENT_ID).delete()
    Application.objects.create(
        name="agentprocess", client_id=CLIENT_ID, client_secret=CLIENT_SECRET,
        client_type=Application.CLIENT_CONFIDENTIAL, authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=redirect_uri, post_logout_redirect_uris=post_logout_uri, skip_authorization=True,
        algorithm=Application.RS256_ALGORITHM)


def _validator_class():
    from oauth2_provider.oauth2_validators import OAuth2Validator

    class Validator(OAuth2Validator):
        oidc_claim_scope = {**OAuth2Validator.oidc_claim_scope, "groups": "openid"}

        def get_additional_claims(self, request):
            person = _directory().get(request.user.username, {})
            return {"email": person.get("email", ""), "email_verified": True,
                    "given_name": person.get("given_name", ""), "family_name": person.get("family_name", ""),
                    **({"groups": person["groups"]} if "groups" in person else {})}

        def finalize_id_token(self, id_token, token, token_handler, request):
            misbehave = _directory().get(request.user.username, {}).get("misbehave")
            if not misbehave:
                return super().finalize_id_token(id_token, token, token_handler, request)
            return self._lying_id_token(misbehave, id_token, token, token_handler, request)

        def _lying_id_token(self, misbehave, id_token, token, token_handler, request):
            import time

            from jwcrypto import jwk, jwt

            claims, expiration_time = self.get_id_token_dictionary(token, token_handler, request)
            id_token.update(**claims)
            id_token.setdefault("nonce", request.nonce)
            key = request.client.jwk_key
            if misbehave == "nonce":
                id_token["nonce"] = "a-nonce-of-another-sign-in"
            elif misbehave == "audience":
                id_token["aud"] = "another-application"
            elif misbehave == "expired":
                id_token["iat"], id_token["exp"] = int(time.time()) - 7200, int(time.time()) - 3600
            elif misbehave == "unknown_key":
                key = jwk.JWK.generate(kty="RSA", size=2048)
            header = {"typ": "JWT", "alg": "RS256", "kid": key.thumbprint()}
            signed = jwt.JWT(header=json.dumps(header), claims=json.dumps(id_token, default=str))
            signed.make_signed_token(key)
            saved = self._save_id_token(id_token["jti"], request, expiration_time)
            request.access_token = request.id_token = saved
            return signed.serialize()

    return Validator


def __getattr__(name):  # the validator class, built once Django is set up
    if name == "Validator":
        return _validator_class()
    if name == "urlpatterns":
        from django.contrib.auth import views as auth_views
        from django.urls import include, path

        return [path("login/", auth_views.LoginView.as_view(), name="login"),
                path("o/", include("oauth2_provider.urls", namespace="oauth2_provider"))]
    raise AttributeError(name)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--redirect-uri", required=True)
    parser.add_argument("--post-logout-uri", required=True)
    arguments = parser.parse_args()
    _configure(arguments.port, arguments.folder, arguments.redirect_uri, arguments.post_logout_uri)
    from django.core.servers.basehttp import run
    from django.core.wsgi import get_wsgi_application

    run("127.0.0.1", arguments.port, get_wsgi_application(), threading=True)


# --- the test side ---------------------------------------------------------------------------


def free_port() -> int:
    """A loopback port nobody listens on: one of OIDC_PROVIDER_PORTS (e.g. 8620-8629) when set, else any."""
    first, _, last = os.environ.get("OIDC_PROVIDER_PORTS", "0").partition("-")
    for port in range(int(first), int(last or first) + 1):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return probe.getsockname()[1]
    raise RuntimeError(f"no free port in OIDC_PROVIDER_PORTS={os.environ['OIDC_PROVIDER_PORTS']}")


@dataclass
class ProviderProcess:
    folder: Path
    port: int
    redirect_uri: str
    post_logout_uri: str
    process: subprocess.Popen | None = None

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}/o"

    @property
    def log_path(self) -> Path:
        return self.folder / "provider.log"

    def write_directory(self, people: dict) -> None:
        draft = self.folder / "directory.json.new"
        draft.write_text(json.dumps(people))
        draft.replace(self.folder / "directory.json")

    def rotate_key(self) -> None:
        (self.folder / "key.pem").write_text(rsa_key_pem())

    @contextlib.contextmanager
    def running(self):
        from .live import serving

        if not (self.folder / "key.pem").exists():
            self.rotate_key()
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.oidc_provider", "--port", str(self.port), "--folder",
             str(self.folder), "--redirect-uri", self.redirect_uri, "--post-logout-uri", self.post_logout_uri],
            cwd=Path(__file__).resolve().parents[2], stdout=log, stderr=subprocess.STDOUT,
            env={key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"})
        try:
            with serving(self.process, f"{self.issuer}/.well-known/openid-configuration", "the OIDC provider",
                         lambda: self.log_path.read_text(errors="replace")):
                yield self
        finally:
            log.close()



def through_provider(authorize_url: str, username: str, password: str) -> str:
    """What a browser does at the provider: sign in there, be sent back. Returns the redirect URI the
    provider sends the person to (with `code` and `state`)."""
    from urllib.parse import parse_qs, urljoin, urlsplit

    import requests

    with requests.Session() as browser:
        answer = browser.get(authorize_url, allow_redirects=False, timeout=10)
        assert answer.status_code == 302, answer.text[:500]
        login_url = urljoin(authorize_url, answer.headers["Location"])
        browser.get(login_url, timeout=10)
        next_url = parse_qs(urlsplit(login_url).query)["next"][0]
        answer = browser.post(login_url, data={"username": username, "password": password, "next": next_url,
                                               "csrfmiddlewaretoken": browser.cookies["idp_csrftoken"]},
                              headers={"Referer": login_url}, allow_redirects=False, timeout=10)
        assert answer.status_code == 302, f"the provider refused {username}'s password"
        answer = browser.get(urljoin(login_url, answer.headers["Location"]), allow_redirects=False, timeout=10)
        assert answer.status_code == 302, answer.text[:500]
        return answer.headers["Location"]


if __name__ == "__main__":
    main()
