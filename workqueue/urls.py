from django.urls import path

from . import views

app_name = "workqueue"
urlpatterns = [
    path("", views.inbox, name="inbox"),
]
