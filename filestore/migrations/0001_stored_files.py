"""Uploaded files' bytes in the database (FILE_STORAGE=database; issue 22, point 1)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('agentprocess', '0012_organization_everywhere'),
    ]

    operations = [
        migrations.CreateModel(
            name='StoredFile',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=200)),
                ('size', models.PositiveBigIntegerField()),
                ('modified_at', models.DateTimeField()),
                ('organization', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='agentprocess.organization')),
            ],
        ),
        migrations.CreateModel(
            name='FileChunk',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('offset', models.PositiveBigIntegerField()),
                ('data', models.BinaryField()),
                ('organization', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='agentprocess.organization')),
                ('file', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='chunks', to='filestore.storedfile')),
            ],
        ),
        migrations.AddConstraint(
            model_name='storedfile',
            constraint=models.UniqueConstraint(fields=('organization', 'name'), name='stored_file_name'),
        ),
        migrations.AddConstraint(
            model_name='filechunk',
            constraint=models.UniqueConstraint(fields=('file', 'offset'), name='file_chunk_offset'),
        ),
    ]
