"""What every page's navigation needs: whether the signed-in person is an operator, also on pages
no person view rendered (a 404 for an unknown address, the CSRF failure page)."""

from django.utils.functional import SimpleLazyObject

from kernel.identity import person_identity


def navigation(request) -> dict:
    def is_operator() -> bool:
        identity = getattr(request, "identity", None)
        if identity is None:
            user = getattr(request, "user", None)
            identity = person_identity(user) if user is not None and user.is_authenticated else None
        return bool(identity and identity.is_operator)

    return {"nav_is_operator": SimpleLazyObject(is_operator)}
