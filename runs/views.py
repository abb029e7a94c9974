"""File download behind the short-lived signed URLs of run data (spec §5): the server streams the
stored bytes, or with S3_PRESIGNED_URLS redirects to a presigned URL of the bucket."""

from django.http import FileResponse, Http404, HttpResponseRedirect

from kernel.identity import person_identity

from . import visibility
from .models import Upload
from .services import stored_files
from .services.rundata import read_file_token


def file_download(request, upload_id: str):
    issued = read_file_token(request.GET.get("t", ""), upload_id)
    if issued is None:
        raise Http404("This link is invalid or has expired.")
    organization_id, run_id = issued
    if request.user.is_authenticated and run_id:
        # A signed-in person opens the file only if they may see its run (the link alone is the
        # credential for agents and scripts, who get it from run data the protocol gives them).
        identity = person_identity(request.user)
        if identity is None or identity.organization.id != organization_id or \
                visibility.visible_run(identity, run_id) is None:
            raise Http404("No such file.")
    upload = Upload.objects.filter(pk=upload_id, organization_id=organization_id).first()
    if upload is None:
        raise Http404("No such file.")
    if bucket_url := stored_files.presigned_url(upload.file.name, file_name=upload.file_name,
                                                content_type=upload.content_type):
        return HttpResponseRedirect(bucket_url)
    response = FileResponse(upload.file.open("rb"), content_type=upload.content_type,
                            as_attachment=False, filename=upload.file_name)
    response["X-Content-Type-Options"] = "nosniff"
    # Uploaded bytes are untrusted: never let a browser run them as a page of this site.
    response["Content-Security-Policy"] = "sandbox; default-src 'none'"
    return response
