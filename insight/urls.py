from django.urls import path

from . import views

app_name = "insight"
urlpatterns = [
    path("insight/", views.index, name="index"),
    path("insight/<str:name>/", views.dashboard, name="dashboard"),
]
