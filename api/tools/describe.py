from django.conf import settings

from kernel.capabilities import PROTOCOL, VERSION, offered_profiles, offered_tools

from .registry import tool


def limits() -> dict:
    # Always all five: the core-2 schema of describe requires them, whether or not check-1 is
    # offered (describe.profiles says that).
    return {"runDataBytes": settings.RUN_DATA_BYTES, "checkPass": settings.CHECK_PASS,
            "checkFail": settings.CHECK_FAIL, "checkConfidence": settings.CHECK_CONFIDENCE,
            "checkStateBytes": settings.CHECK_STATE_BYTES}


@tool("describe", write=False, description="Protocol version, profiles, lease seconds, person format, tools and limits.")
def describe(identity, arguments, now) -> dict:
    tools = offered_tools()
    result = {
        "protocol": PROTOCOL,
        "version": VERSION,
        "profiles": sorted(offered_profiles()),
        "leaseSeconds": settings.LEASE_SECONDS,
        "person": {"format": "email"},
        "tools": tools,
        "limits": limits(),
    }
    if "upload" in tools:
        result["maxUploadBytes"] = settings.MAX_UPLOAD_BYTES
    return result
