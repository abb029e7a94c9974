"""File download behind the short-lived signed URLs of run data (spec §5): the server streams the
stored bytes, or with S3_PRESIGNED_URLS redirects to a presigned URL of the bucket."""

from django.http import FileResponse, Http404, HttpResponseRedirect
from django.shortcuts import render
from django.utils.csp import CSP
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.csp import csp_override

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
    # A preview (?preview=1: the page's own reading of the bytes) always passes through this server,
    # with its headers, on every backend; a download may go to the bucket.
    bucket_url = None if request.GET.get("preview") == "1" else stored_files.presigned_url(
        upload.file.name, file_name=upload.file_name, content_type=upload.content_type)
    if bucket_url:
        return HttpResponseRedirect(bucket_url)
    response = FileResponse(upload.file.open("rb"), content_type=upload.content_type,
                            as_attachment=False, filename=upload.file_name)
    response["X-Content-Type-Options"] = "nosniff"
    # Uploaded bytes are untrusted: never let a browser run them as a page of this site.
    response["Content-Security-Policy"] = "sandbox; default-src 'none'"
    return response


# The evidence viewer of a PDF (issue 26): a page of its own in a frame sandboxed without
# allow-same-origin, so it runs in an opaque origin that can read nothing of this site. It loads
# only PDF.js and its own module from /static/ (no inline script, no eval), gets the document's bytes
# from the work item page by postMessage, and draws them; no script of the document runs.
VIEWER_CSP = {
    "default-src": [CSP.NONE],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:", "blob:"],
    "font-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "worker-src": [CSP.NONE],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "form-action": [CSP.NONE],
    "frame-ancestors": [CSP.SELF],
    "sandbox": ["allow-scripts"],
}


@xframe_options_sameorigin
@csp_override(VIEWER_CSP)
def pdf_viewer(request):
    response = render(request, "workqueue/pdf_viewer.html")
    response["X-Content-Type-Options"] = "nosniff"
    response["Referrer-Policy"] = "no-referrer"
    return response
