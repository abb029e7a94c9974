from django.urls import path

from . import views

app_name = "sso"
urlpatterns = [
    path("accounts/oidc/<slug:slug>/login/", views.start, name="start"),
    path("accounts/oidc/<slug:slug>/callback/", views.callback, name="callback"),
]
