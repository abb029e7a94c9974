from django.urls import path

from . import views

app_name = "insight"
urlpatterns = [
    path("insight/", views.index, name="index"),
    path("insight/<str:name>/", views.dashboard, name="dashboard"),
    path("insight/<str:name>/alerts", views.set_alert, name="set_alert"),
    path("insight/<str:name>/alerts/<int:rule_id>/remove", views.remove_alert, name="remove_alert"),
]
