"""A fast salted SHA-256 hasher for OAuth client secrets only.

Client secrets are long random strings the server generates (well over 128 bits), so key
stretching protects nothing and PBKDF2's cost (about a second of CPU per token request on small
machines) would make every client-credentials token request slow. People's passwords keep
Django's default hasher: this one is last in PASSWORD_HASHERS and only named for client secrets.
"""

import hashlib

from django.contrib.auth.hashers import BasePasswordHasher, mask_hash
from django.utils.crypto import constant_time_compare


class ClientSecretHasher(BasePasswordHasher):
    algorithm = "sha256_client_secret"

    def encode(self, password, salt):
        self._check_encode_args(password, salt)
        digest = hashlib.sha256((salt + password).encode()).hexdigest()
        return f"{self.algorithm}${salt}${digest}"

    def decode(self, encoded):
        algorithm, salt, digest = encoded.split("$", 2)
        assert algorithm == self.algorithm
        return {"algorithm": algorithm, "hash": digest, "salt": salt}

    def verify(self, password, encoded):
        decoded = self.decode(encoded)
        return constant_time_compare(encoded, self.encode(password, decoded["salt"]))

    def safe_summary(self, encoded):
        decoded = self.decode(encoded)
        return {"algorithm": decoded["algorithm"], "salt": mask_hash(decoded["salt"], show=2),
                "hash": mask_hash(decoded["hash"])}

    def harden_runtime(self, password, encoded):
        pass
