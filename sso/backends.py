"""The authentication backend of people signed in by an identity provider (sso/views.py logs them
in with it): it checks no password and authenticates nobody by itself; it only reloads the signed-in
person on each request (Django's ModelBackend.get_user: an inactive person has no session)."""

from django.contrib.auth.backends import ModelBackend


class ProviderBackend(ModelBackend):
    def authenticate(self, request, **credentials):
        return None
