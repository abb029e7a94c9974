from django.apps import AppConfig


class FilestoreConfig(AppConfig):
    """Uploaded files' bytes in the database itself (FILE_STORAGE=database): a Django storage
    backend for deployments that want no file system or object store shared between hosts."""

    name = "filestore"
    verbose_name = "Stored files (database storage)"
