from django.apps import AppConfig


class ProcessesConfig(AppConfig):
    name = "processes"
    verbose_name = "Processes"
