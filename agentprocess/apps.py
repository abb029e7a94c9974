from django.apps import AppConfig


class AgentprocessConfig(AppConfig):
    name = "agentprocess"
    verbose_name = "Organizations and identities"
