from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from api import oauth
from api.rest import ToolView
from runs.views import file_download

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/tools/<str:tool>", ToolView.as_view(), name="tool"),
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="openapi-schema"),
    path("api/v1/docs/", SpectacularSwaggerView.as_view(url_name="openapi-schema"), name="openapi-docs"),
    path("files/<str:upload_id>", file_download, name="file-download"),
    path("accounts/", include("django.contrib.auth.urls")),
    # OAuth 2.1 (issue 7): /o/authorize/, /o/token/, /o/revoke_token/ and the /.well-known/ documents.
    path("", include(oauth.urlpatterns)),
    path("", include("workqueue.urls")),
]
