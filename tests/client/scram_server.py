"""A minimal SCRAM server (RFC 5802), written for tests from the RFC's formulas.

It checks the client proof and produces the server signature, so the client
mechanism can be tested against an independent implementation of the other
side, for SHA-256 and SHA-512 alike.
"""

from __future__ import annotations

import base64
import hashlib
import hmac


class ScramServer:
    def __init__(
        self,
        hash_name: str,
        username: str,
        password: str,
        *,
        salt: bytes = b"kafkacore-salt",
        iterations: int = 4096,
        server_nonce: str = "srvnonce123",
    ) -> None:
        self.hash_name = hash_name
        self.username = username
        self.salt = salt
        self.iterations = iterations
        self.server_nonce = server_nonce
        salted = hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, iterations)
        self.stored_key = hashlib.new(
            hash_name, hmac.new(salted, b"Client Key", hash_name).digest()
        ).digest()
        self.server_key = hmac.new(salted, b"Server Key", hash_name).digest()
        self.client_first_bare = ""
        self.server_first = ""
        self.authenticated = False

    def first(self, client_first: bytes) -> bytes:
        text = client_first.decode()
        assert text.startswith("n,,"), text
        self.client_first_bare = text[3:]
        attrs = dict(part.split("=", 1) for part in self.client_first_bare.split(","))
        if attrs["n"] != self.username:
            return b"e=unknown-user"
        nonce = attrs["r"] + self.server_nonce
        salt = base64.b64encode(self.salt).decode()
        self.server_first = f"r={nonce},s={salt},i={self.iterations}"
        return self.server_first.encode()

    def final(self, client_final: bytes) -> bytes:
        text = client_final.decode()
        without_proof, _, proof_part = text.rpartition(",")
        assert proof_part.startswith("p=")
        proof = base64.b64decode(proof_part[2:])
        auth_message = f"{self.client_first_bare},{self.server_first},{without_proof}".encode()
        signature = hmac.new(self.stored_key, auth_message, self.hash_name).digest()
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if hashlib.new(self.hash_name, client_key).digest() != self.stored_key:
            return b"e=invalid-proof"
        self.authenticated = True
        server_sig = hmac.new(self.server_key, auth_message, self.hash_name).digest()
        return b"v=" + base64.b64encode(server_sig)
