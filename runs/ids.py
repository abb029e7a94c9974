"""Public ids: a kind prefix and 16 random base32 characters (80 bits), e.g. r_k3j9…"""

import base64
import secrets


def new_id(prefix: str) -> str:
    return f"{prefix}_{base64.b32encode(secrets.token_bytes(10)).decode().lower()}"


def new_run_id() -> str:
    return new_id("r")


def new_work_item_id() -> str:
    return new_id("w")


def new_upload_id() -> str:
    return new_id("f")
