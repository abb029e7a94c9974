"""The identity providers this server signs people in with, read from the settings (README
"Sign-in for people"): one from OIDC_ISSUER into the default organization, or each entry of
OIDC_PROVIDERS into the organization it names. A provider signs people into one organization only.

Read at each use (not at import), so a changed setting needs no code path of its own; a malformed
entry raises ImproperlyConfigured naming what is wrong.
"""

from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.text import slugify

from kernel.models import DEFAULT_ORGANIZATION_SLUG

DEFAULT_SLUG = "oidc"
# The keys of an OIDC_PROVIDERS entry: the settings' names in lower case without OIDC_, plus
# the organization (its slug) and the slug of the provider's URLs.
KEYS = {"name", "slug", "issuer", "client_id", "client_secret", "scopes", "organization", "create_users",
        "link_verified_email", "groups_claim", "group_map", "operator_group"}


@dataclass(frozen=True)
class Provider:
    slug: str  # in the URLs: /accounts/oidc/<slug>/login/ and …/callback/
    name: str  # the button's "Sign in with <name>"
    issuer: str
    client_id: str
    client_secret: str
    scopes: str
    organization: str  # the organization's slug
    create_users: bool
    link_verified_email: bool
    groups_claim: str
    group_map: tuple[tuple[str, str], ...]  # (provider group, group here); empty: the same names
    operator_group: str

    @property
    def discovery_url(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"

    @property
    def source(self) -> str:
        """How audit events name this provider as the source of a change."""
        return f"identity provider {self.name}"

    def groups_here(self, provider_groups: list[str]) -> set[str]:
        """The names of the groups here that these provider groups give."""
        if not self.group_map:
            return set(provider_groups)
        given = set(provider_groups)
        return {ours for theirs, ours in self.group_map if theirs in given}


def parse_group_map(text: str) -> tuple[tuple[str, str], ...]:
    """`idp-group=our-group,…` into pairs; a provider group may give several groups here."""
    pairs = []
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        theirs, equals, ours = entry.partition("=")
        if not equals or not theirs.strip() or not ours.strip():
            raise ImproperlyConfigured(f"OIDC_GROUP_MAP entries are provider-group=our-group, not {entry!r}")
        pairs.append((theirs.strip(), ours.strip()))
    return tuple(pairs)


def _flag(value, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "on", "yes", "1", "false", "off", "no", "0", ""):
        return value.strip().lower() in ("true", "on", "yes", "1")
    raise ImproperlyConfigured(f"OIDC_PROVIDERS: {name} is true or false, not {value!r}")


def _provider(entry: dict, *, slug: str, organization: str, single: bool = False) -> Provider:
    unknown = sorted(set(entry) - KEYS)
    if unknown:
        raise ImproperlyConfigured(f"OIDC_PROVIDERS: unknown keys {', '.join(unknown)} (known: {', '.join(sorted(KEYS))})")
    missing = [key for key in ("issuer", "client_id") if not str(entry.get(key) or "").strip()]
    if missing and single:
        raise ImproperlyConfigured("OIDC_ISSUER is set without OIDC_CLIENT_ID (the client id the provider gave "
                                   "this server)")
    if missing:
        raise ImproperlyConfigured(f"OIDC_PROVIDERS: the provider {entry.get('name') or slug!r} needs "
                                   f"{' and '.join(missing)}")
    group_map = entry.get("group_map", settings.OIDC_GROUP_MAP)
    if isinstance(group_map, dict):
        group_map = ",".join(f"{theirs}={ours}" for theirs, ours in group_map.items())
    return Provider(
        slug=slug, name=str(entry.get("name") or settings.OIDC_NAME), issuer=str(entry["issuer"]).rstrip("/"),
        client_id=str(entry["client_id"]), client_secret=str(entry.get("client_secret") or ""),
        scopes=str(entry.get("scopes") or settings.OIDC_SCOPES), organization=organization,
        create_users=_flag(entry.get("create_users", settings.OIDC_CREATE_USERS), "create_users"),
        link_verified_email=_flag(entry.get("link_verified_email", settings.OIDC_LINK_VERIFIED_EMAIL),
                                  "link_verified_email"),
        groups_claim=str(entry.get("groups_claim") or settings.OIDC_GROUPS_CLAIM),
        group_map=parse_group_map(str(group_map or "")),
        operator_group=str(entry.get("operator_group", settings.OIDC_OPERATOR_GROUP) or ""))


def configured() -> list[Provider]:
    """Every provider, in the order of the settings."""
    if settings.OIDC_PROVIDERS:
        if not isinstance(settings.OIDC_PROVIDERS, list) or not all(
                isinstance(entry, dict) for entry in settings.OIDC_PROVIDERS):
            raise ImproperlyConfigured("OIDC_PROVIDERS is a JSON list of objects")
        providers = []
        for entry in settings.OIDC_PROVIDERS:
            slug = slugify(entry.get("slug") or entry.get("name") or "")
            if not slug:
                raise ImproperlyConfigured("OIDC_PROVIDERS: each provider needs a name or a slug")
            providers.append(_provider(entry, slug=slug,
                                       organization=str(entry.get("organization") or DEFAULT_ORGANIZATION_SLUG)))
        slugs = [provider.slug for provider in providers]
        if len(set(slugs)) != len(slugs):
            raise ImproperlyConfigured(f"OIDC_PROVIDERS: two providers share a slug ({', '.join(slugs)})")
        return providers
    if settings.OIDC_ISSUER:
        return [_provider({"issuer": settings.OIDC_ISSUER, "client_id": settings.OIDC_CLIENT_ID,
                           "client_secret": settings.OIDC_CLIENT_SECRET}, slug=DEFAULT_SLUG,
                          organization=DEFAULT_ORGANIZATION_SLUG, single=True)]
    return []


def by_slug(slug: str) -> Provider | None:
    return next((provider for provider in configured() if provider.slug == slug), None)
