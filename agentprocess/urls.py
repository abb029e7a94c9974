from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from django.utils.csp import CSP
from django.views.decorators.csp import csp_override
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from api import oauth
from api.rest import ToolView
from runs.views import file_download
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
    path("accounts/login/", accounts.sign_in, name="login"),
    path("accounts/password_reset/", accounts.password_reset, name="password_reset"),
    path("accounts/", include("django.contrib.auth.urls")),
    # OAuth 2.1 (issue 7): /o/authorize/, /o/token/, /o/revoke_token/ and the /.well-known/ documents.
    path("", include(oauth.urlpatterns)),
    path("", include("insight.urls")),
    path("", include("workqueue.urls")),
]
