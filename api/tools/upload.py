from runs.services.uploads import upload as store

from .registry import tool


# Looked up before acting: a replay must not write the bytes to storage a second time.
@tool("upload", write=True, replay_first=True, description="Store a file (base64) as evidence; returns its id and SHA-256.")
def upload(identity, arguments, now) -> dict:
    row = store(identity=identity, file_name=arguments["fileName"], content_type=arguments["contentType"],
                content_base64=arguments["contentBase64"], now=now)
    return {"id": row.id, "sha256": row.sha256, "bytes": row.size}
