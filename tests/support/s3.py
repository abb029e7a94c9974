"""An S3-compatible endpoint for tests: moto in server mode, a real HTTP server in a subprocess,
so the S3 backend runs the same code path (boto3 over HTTP, signed requests) as against real S3.

    def test_x(s3_endpoint): ...                          # the session's moto server: http://127.0.0.1:PORT
    s3_environment(s3_endpoint, new_bucket(s3_endpoint))  # FILE_STORAGE=s3 and S3_* for a server process
    s3_storage(s3_endpoint, bucket)                       # the same as a STORAGES entry, in this process

Registered in tests/conftest.py (`pytest_plugins`). Under CI=true it must start: nothing is skipped.
"""

import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from .live import serving

STARTUP_SECONDS = 30
# moto accepts any credentials; these only have to be the same on both sides.
ACCESS_KEY, SECRET_KEY, REGION = "test-access-key", "test-secret-key", "us-east-1"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def start_moto(log_path: Path) -> Iterator[str]:
    """`python -m moto.server` on a free loopback port until the block ends; its base URL."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with log_path.open("wb") as log:
        process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                   stdout=log, stderr=subprocess.STDOUT)
    with serving(process, url, "moto", lambda: log_path.read_text(errors="replace"), STARTUP_SECONDS):
        yield url


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory) -> Iterator[str]:
    with start_moto(tmp_path_factory.mktemp("moto") / "moto.log") as url:
        yield url


def client(endpoint: str):
    import boto3

    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET_KEY, region_name=REGION)


def new_bucket(endpoint: str) -> str:
    """A fresh, empty bucket (one per test: tests never see each other's objects)."""
    name = f"evidence-{uuid.uuid4().hex[:12]}"
    client(endpoint).create_bucket(Bucket=name)
    return name


def s3_environment(endpoint: str, bucket: str) -> dict[str, str]:
    """The settings a server process reads for FILE_STORAGE=s3 (README "Files on several hosts")."""
    return {"FILE_STORAGE": "s3", "S3_ENDPOINT_URL": endpoint, "S3_BUCKET": bucket, "S3_REGION": REGION,
            "S3_ACCESS_KEY_ID": ACCESS_KEY, "S3_SECRET_ACCESS_KEY": SECRET_KEY}


def s3_storage(endpoint: str, bucket: str) -> dict:
    """The STORAGES entry agentprocess/settings.py makes of s3_environment."""
    from agentprocess.settings import s3_storage as from_environment

    return from_environment(s3_environment(endpoint, bucket))
