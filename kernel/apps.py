from django.apps import AppConfig


class KernelConfig(AppConfig):
    """The bottom layer: organizations, identities, errors, the clock, paging and SQL helpers.

    The label stays "agentprocess" (the app's name before it moved out of the project package), so
    table names, migration records and admin URLs are unchanged."""

    name = "kernel"
    label = "agentprocess"
    verbose_name = "Organizations and identities"

    def ready(self):
        from django.db.backends.signals import connection_created

        from .pool import on_connection_created

        connection_created.connect(on_connection_created, dispatch_uid="kernel.pool")
