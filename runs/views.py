"""File download behind the short-lived signed URLs of run data (spec §5)."""

from django.http import FileResponse, Http404

from .models import Upload
from .services.rundata import read_file_token


def file_download(request, upload_id: str):
    organization_id = read_file_token(request.GET.get("t", ""), upload_id)
    if organization_id is None:
        raise Http404("This link is invalid or has expired.")
    upload = Upload.objects.filter(pk=upload_id, organization_id=organization_id).first()
    if upload is None:
        raise Http404("No such file.")
    response = FileResponse(upload.file.open("rb"), content_type=upload.content_type,
                            as_attachment=False, filename=upload.file_name)
    response["X-Content-Type-Options"] = "nosniff"
    # Uploaded bytes are untrusted: never let a browser run them as a page of this site.
    response["Content-Security-Policy"] = "sandbox; default-src 'none'"
    return response
