"""The content hash of a published version (spec §6 rule 5)."""

import hashlib

import rfc8785


def content_hash(frontmatter: dict, body: str) -> str:
    """SHA-256 over the RFC 8785 canonical JSON of the parsed frontmatter, one newline, then
    the body exactly as written."""
    return hashlib.sha256(rfc8785.dumps(frontmatter) + b"\n" + body.encode("utf-8")).hexdigest()
