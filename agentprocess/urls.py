from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from django.utils.csp import CSP
from django.views.decorators.csp import csp_override
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from api import oauth
from api.rest import ToolView
from runs.views import file_download, pdf_viewer
from sso import views as sso_views
from workqueue import accounts

# Swagger UI adds <style> elements as it draws; on this page only (no user content on it),
# inline styles are allowed. Scripts stay this server's own files.
api_docs = csp_override({**settings.SECURE_CSP, "style-src": [CSP.SELF, CSP.UNSAFE_INLINE]})(
    SpectacularSwaggerSplitView.as_view(url_name="openapi-schema"))

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/tools/<str:tool>", ToolView.as_view(), name="tool"),
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="openapi-schema"),
    path("api/v1/docs/", api_docs, name="openapi-docs"),
    path("files/<str:upload_id>", file_download, name="file-download"),
    path("files/viewer/pdf", pdf_viewer, name="pdf-viewer"),
    path("accounts/login/", accounts.sign_in, name="login"),
    # Password pages answer 404 with PASSWORD_LOGIN off (issue 25): each named before Django's own.
    path("accounts/password_reset/", accounts.password_reset, name="password_reset"),
    path("accounts/password_reset/done/", accounts.password_reset_done, name="password_reset_done"),
    path("accounts/reset/<uidb64>/<token>/", accounts.password_reset_confirm, name="password_reset_confirm"),
    path("accounts/reset/done/", accounts.password_reset_complete, name="password_reset_complete"),
    path("accounts/password_change/", accounts.password_change, name="password_change"),
    path("accounts/password_change/done/", accounts.password_change_done, name="password_change_done"),
    path("accounts/logout/", sso_views.sign_out, name="logout"),  # and at the identity provider (issue 25)
    path("", include("sso.urls")),  # /accounts/oidc/<provider>/login/ and …/callback/ (issue 25)
    path("scim/v2/", include("sso.scim.urls")),  # SCIM 2.0 provisioning, bearer token per provider (issue 25)
    path("accounts/", include("django.contrib.auth.urls")),
    # OAuth 2.1 (issue 7): /o/authorize/, /o/token/, /o/revoke_token/ and the /.well-known/ documents.
    path("", include(oauth.urlpatterns)),
    path("", include("insight.urls")),
    path("", include("workqueue.urls")),
]
