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
from django.http import Http404
from django.shortcuts import render

from kernel import throttle
from sso import passwords, providers


class EmailBackend(ModelBackend):
    """Sign in with the email address in any case: addresses are stored lower-cased
    (kernel/identity_names.py), and an account made before that keeps the case it was given.
    With PASSWORD_LOGIN off, passwords work only for break-glass accounts (sso/passwords.py), each
    use audited, and sessions a password opened before end at their next request."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is not None:
            found = list(get_user_model().objects.filter(username__iexact=username.strip())
                         .values_list("username", flat=True)[:2])
            if len(found) == 1:
                username = found[0]
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None or passwords.on():
            return user
        if not passwords.break_glass(user):
            return None
        passwords.record_break_glass(user, throttle.address_of(request) if request is not None else "")
        return user

    def get_user(self, user_id):
        user = super().get_user(user_id)
        return user if user is not None and passwords.may_use_password(user) else None


def password_pages(view):
    """Reset and change pages exist only while passwords are used here (PASSWORD_LOGIN)."""

    def page(request, *args, **kwargs):
        if not passwords.on():
            raise Http404("password sign-in is switched off")
        return view(request, *args, **kwargs)

    return page


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
        if not passwords.on():
            names = " or ".join(provider.name for provider in providers.configured()) or "your identity provider"
            context = self.get_context_data(form=self.get_form())
            context["refused"] = f"Passwords are not used here. Sign in with {names}."
            return render(request, self.template_name, context, status=403)
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
password_reset = password_pages(PasswordResetView.as_view())
password_reset_done = password_pages(auth_views.PasswordResetDoneView.as_view())
password_reset_confirm = password_pages(auth_views.PasswordResetConfirmView.as_view())
password_reset_complete = password_pages(auth_views.PasswordResetCompleteView.as_view())
password_change = password_pages(auth_views.PasswordChangeView.as_view())
password_change_done = password_pages(auth_views.PasswordChangeDoneView.as_view())
