from django.urls import path

from . import views

app_name = "workqueue"
urlpatterns = [
    path("", views.inbox, name="inbox"),
    path("views/save", views.save_view, name="save_view"),
    path("views/<int:view_id>/delete", views.delete_view, name="delete_view"),
    path("work/bulk", views.bulk_decide, name="bulk_decide"),
    path("runs/bulk-cancel", views.bulk_cancel, name="bulk_cancel"),
    path("work/<str:work_item_id>", views.work_item, name="work_item"),
    path("work/<str:work_item_id>/take", views.take_item, name="take_item"),
    path("work/<str:work_item_id>/release", views.release_item, name="release_item"),
    path("work/<str:work_item_id>/assign", views.assign_item, name="assign_item"),
    path("runs/", views.run_list, name="runs"),
    path("runs/start/", views.start_run, name="start_run"),
    path("runs/<str:run_id>", views.run_detail, name="run"),
    path("runs/<str:run_id>/cancel", views.cancel_run, name="cancel_run"),
    path("runs/<str:run_id>/audit.<str:fmt>", views.audit_download, name="run_audit"),
    path("audit/export", views.audit_download, name="audit_export"),
    path("operators/", views.operators, name="operators"),
    path("operators/webhooks/", views.webhooks, name="webhooks"),
    path("operators/webhooks/add", views.webhook_add, name="webhook_add"),
    path("operators/webhooks/<int:subscription_id>", views.webhook_log, name="webhook_log"),
    path("operators/webhooks/<int:subscription_id>/rotate", views.webhook_rotate, name="webhook_rotate"),
    path("operators/webhooks/<int:subscription_id>/resume", views.webhook_resume, name="webhook_resume"),
    path("operators/webhooks/<int:subscription_id>/remove", views.webhook_remove, name="webhook_remove"),
    path("operators/webhooks/<int:subscription_id>/replay", views.webhook_replay, name="webhook_replay"),
    path("operators/webhooks/<int:subscription_id>/deliveries/<int:delivery_id>/send-again", views.webhook_send_again,
         name="webhook_send_again"),
    path("tokens/", views.tokens, name="tokens"),
    path("tokens/<int:token_id>/revoke", views.revoke, name="revoke_token"),
    path("settings/notifications", views.notification_settings, name="notification_settings"),
    path("settings/time-zone", views.time_zone, name="time_zone"),
]
