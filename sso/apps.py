from django.apps import AppConfig


class SsoConfig(AppConfig):
    name = "sso"
    verbose_name = "Sign-in with identity providers"

    def ready(self):
        from . import providers

        providers.configured()  # a malformed OIDC_* setting stops the server at start, naming what is wrong
