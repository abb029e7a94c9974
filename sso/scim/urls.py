"""/scim/v2/: Users and Groups (GET, POST, PUT, PATCH, DELETE; GET with filter=), and the three
discovery documents RFC 7644 §4 asks for. Nothing else of django-scim2 is routed (no /Me, /Bulk,
/.search)."""

from django.urls import re_path
from django_scim import views as library

from . import views

app_name = "scim"
urlpatterns = [
    re_path(r"^Users(?:/(?P<uuid>[^/]+))?$", views.Users.as_view(), name="users"),
    re_path(r"^Groups(?:/(?P<uuid>[^/]+))?$", views.Groups.as_view(), name="groups"),
    re_path(r"^ServiceProviderConfig$", library.ServiceProviderConfigView.as_view(), name="service-provider-config"),
    re_path(r"^ResourceTypes(?:/(?P<uuid>[^/]+))?$", views.ResourceTypes.as_view(), name="resource-types"),
    re_path(r"^Schemas(?:/(?P<uuid>[^/]+))?$", views.Schemas.as_view(), name="schemas"),
    re_path(r"^(?P<path>.*)$", views.unknown),
]
