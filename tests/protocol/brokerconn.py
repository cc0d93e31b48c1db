"""A blocking-socket Kafka connection for tests: framing + the generated codec only."""

from __future__ import annotations

import socket
import struct
from pathlib import Path

from kafkacore.protocol._base import Request, Response
from kafkacore.protocol.api import APIS
from kafkacore.protocol.framing import FrameReader, decode_response, encode_request

VECTORS = Path(__file__).resolve().parent / "vectors"


class BrokerConn:
    """One connection; ``call`` sends a request and returns the decoded response."""

    def __init__(self, host: str, port: int, *, capture: bool = False) -> None:
        self.sock = socket.create_connection((host, port), timeout=60)
        self.reader = FrameReader()
        self.correlation_id = 0
        self.capture = capture
        self.last_frame = b""

    def close(self) -> None:
        self.sock.close()

    def send_raw(self, frame: bytes) -> bytes:
        """Send a whole request frame, return the body of the response frame."""
        self.sock.sendall(frame)
        while True:
            chunk = self.sock.recv(65536)
            assert chunk, "broker closed the connection"
            frames = self.reader.feed(chunk)
            if frames:
                assert len(frames) == 1
                self.last_frame = frames[0]
                return frames[0]

    def call(self, msg: Request, version: int, *, save_as: str | None = None) -> Response:
        self.correlation_id += 1
        frame = encode_request(
            msg, version=version, correlation_id=self.correlation_id, client_id="kafkacore-tests"
        )
        body = self.send_raw(frame)
        cid, resp = decode_response(body, msg.API_KEY, version)
        assert cid == self.correlation_id
        if self.capture and save_as:
            (VECTORS / save_as).write_text(
                (struct.pack(">i", len(body)) + body).hex() + "\n", encoding="ascii"
            )
        return resp

    def negotiate(self) -> dict[int, int]:
        """ApiVersions at our highest; the version to use per API key."""
        from kafkacore.protocol.messages import ApiVersionsRequest, ApiVersionsResponse

        resp = self.call(
            ApiVersionsRequest(client_software_name="kafkacore", client_software_version="0.1"),
            APIS[18].max_version,
        )
        assert isinstance(resp, ApiVersionsResponse) and resp.error_code == 0
        versions = {}
        for entry in resp.api_keys:
            ours = APIS.get(entry.api_key)
            if ours is None:
                continue
            hi = min(ours.max_version, entry.max_version)
            if hi >= max(ours.min_version, entry.min_version):
                versions[entry.api_key] = hi
        return versions
