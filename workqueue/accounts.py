"""Signing in and resetting a password: Django's own views, with links that never trust the Host.

A reset mail's link is built from PUBLIC_BASE_URL: a request sent with a forged Host header would
otherwise make the server mail a real person a link to the attacker's site.
"""

from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import PasswordResetForm
from django.shortcuts import render

from kernel import throttle
from sso import providers


class EmailBackend(ModelBackend):
    """Sign in with the email address in any case: addresses are stored lower-cased
    (kernel/identity_names.py), and an account made before that keeps the case it was given."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is not None:
            found = list(get_user_model().objects.filter(username__iexact=username.strip())
                         .values_list("username", flat=True)[:2])
            if len(found) == 1:
                username = found[0]
        return super().authenticate(request, username=username, password=password, **kwargs)


class PublicLinkResetForm(PasswordResetForm):
    def save(self, *args, **kwargs):
        public = urlsplit(settings.PUBLIC_BASE_URL)
        kwargs.update(domain_override=public.netloc, use_https=public.scheme == "https")
        return super().save(*args, **kwargs)




# --- throttles: repeated attempts slow down, then are refused (kernel/throttle.py) -----------------


def _throttled_page(request, template: str, context: dict, error: throttle.Throttled):
    context["throttled"] = f"Too many attempts. To protect the account, wait {error.wait_text} and try again."
    response = render(request, template, context, status=429)
    response["Retry-After"] = str(error.retry_after)
    return response


class SignInView(auth_views.LoginView):
    """Sign-in failures are counted per (account, address), per account and per address
    (throttle.SIGN_IN); the owner from an address that has not failed is never refused.
    The identity providers' buttons come first (sso/providers.py)."""

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context.update(providers=providers.configured(), password_login=settings.PASSWORD_LOGIN)
        return context

    def post(self, request, *args, **kwargs):
        account = request.POST.get("username", "").strip()
        address = throttle.address_of(request)
        try:
            throttle.SIGN_IN.check(account, address)
        except throttle.Throttled as error:
            return _throttled_page(request, self.template_name, self.get_context_data(form=self.get_form()), error)
        response = super().post(request, *args, **kwargs)
        if request.user.is_authenticated:
            throttle.SIGN_IN.succeeded(account, address)
        else:
            throttle.SIGN_IN.failed(account, address)
        return response


class PasswordResetView(auth_views.PasswordResetView):
    """Every reset request counts (it mails someone): per (email, address), per mailbox and per address."""

    form_class = PublicLinkResetForm

    def post(self, request, *args, **kwargs):
        counters = throttle.password_reset_counters(request.POST.get("email", "").strip(), throttle.address_of(request))
        try:
            throttle.check(*counters)
        except throttle.Throttled as error:
            return _throttled_page(request, self.template_name, self.get_context_data(form=self.get_form()), error)
        throttle.count(*counters)
        return super().post(request, *args, **kwargs)


sign_in = SignInView.as_view()
password_reset = PasswordResetView.as_view()
