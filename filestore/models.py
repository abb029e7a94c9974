"""A stored file and its bytes in chunks: the tables behind `filestore.storage.DatabaseStorage`.

Both carry their organization (the first folder of every upload's name, runs.models.upload_path),
so a distributed PostgreSQL keeps a file's bytes on the shard of the runs that use it."""

from django.db import models

from kernel.models import Organization


class StoredFile(models.Model):
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=200)
    size = models.PositiveBigIntegerField()
    modified_at = models.DateTimeField()

    class Meta:
        # With the organization first: the look-up's index, and a key a distributed table may have.
        constraints = [models.UniqueConstraint(fields=["organization", "name"], name="stored_file_name")]

    def __str__(self):
        return self.name


class FileChunk(models.Model):
    """Bytes [offset, offset + len(data)) of a stored file; read one chunk at a time."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    file = models.ForeignKey(StoredFile, on_delete=models.CASCADE, related_name="chunks")
    offset = models.PositiveBigIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["file", "offset"], name="file_chunk_offset")]
