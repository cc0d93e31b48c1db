"""TLS and socket option handling shared by the transports (no broker, no loop)."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

import pytest
import trustme

from kafkacore.errors import AuthenticationError, KafkaConnectionError
from kafkacore.transports._common import make_parts
from kafkacore.transports._sockets import SocketConfig, new_socket
from kafkacore.transports._tls import TlsConfig, build_ssl_context, describe_tls_failure


def test_default_context_verifies_and_floors_tls12() -> None:
    ctx = build_ssl_context(TlsConfig())
    assert ctx.verify_mode is ssl.CERT_REQUIRED
    assert ctx.check_hostname
    assert ctx.minimum_version is ssl.TLSVersion.TLSv1_2


def test_files_are_loaded_and_hostname_check_can_be_turned_off(tmp_path: Path) -> None:
    ca = trustme.CA()
    cafile = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(cafile))
    leaf = ca.issue_cert("client.example")
    cert = tmp_path / "client.pem"
    leaf.private_key_and_cert_chain_pem.write_to_path(str(cert))
    ctx = build_ssl_context(
        TlsConfig(ssl_cafile=str(cafile), ssl_certfile=str(cert), ssl_check_hostname=False)
    )
    assert not ctx.check_hostname
    assert ctx.cert_store_stats()["x509_ca"] == 1


def test_given_context_is_used_as_is_and_not_mixed_with_files() -> None:
    mine = ssl.create_default_context()
    assert build_ssl_context(TlsConfig(ssl_context=mine)) is mine
    with pytest.raises(ValueError, match="ssl_cafile would be ignored"):
        TlsConfig(ssl_context=mine, ssl_cafile="ca.pem")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ssl_keyfile": "k.pem"}, "ssl_keyfile needs ssl_certfile"),
        ({"ssl_password": "x"}, "ssl_password unlocks ssl_keyfile"),
    ],
)
def test_inconsistent_tls_settings_are_refused(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TlsConfig(**kwargs)  # type: ignore[arg-type]


def test_unreadable_files_and_bad_ciphers_name_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="ssl_cafile"):
        build_ssl_context(TlsConfig(ssl_cafile=str(tmp_path / "missing.pem")))
    with pytest.raises(ValueError, match="ssl_ciphers"):
        build_ssl_context(TlsConfig(ssl_ciphers="NO-SUCH-CIPHER"))


def test_tls_failures_map_to_authentication_errors() -> None:
    verify = ssl.SSLCertVerificationError(1, "hostname mismatch")
    err = describe_tls_failure(verify, host="h", port=1, server_hostname="name.example")
    assert isinstance(err, AuthenticationError)
    assert "name.example" in str(err) and err.__cause__ is verify
    other = describe_tls_failure(OSError("reset"), host="h", port=1, server_hostname=None)
    assert isinstance(other, KafkaConnectionError)


def test_socket_options_are_applied_before_connect() -> None:
    config = SocketConfig(
        receive_buffer_bytes=65536,
        send_buffer_bytes=32768,
        source_address=("127.0.0.1", 0),
        socket_options=((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),),
    )
    with new_socket(socket.AF_INET, config) as sock:
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        # Linux doubles the value it reports; never less than asked.
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) >= 65536
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) >= 32768
        assert sock.getsockname()[0] == "127.0.0.1"
        assert not sock.getblocking()


@pytest.mark.parametrize(
    "kwargs",
    [{"receive_buffer_bytes": 0}, {"send_buffer_bytes": True}, {"source_address": ("h", 70000)}],
)
def test_bad_socket_options_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="SocketConfig"):
        SocketConfig(**kwargs)  # type: ignore[arg-type]


def test_client_options_flow_from_one_config() -> None:
    parts = make_parts(
        "Test",
        "h:1",
        ssl_server_hostname="broker.example",
        rng=None,
        options={"receive_buffer_bytes": 4096, "source_address": ("127.0.0.1", 0)},
    )
    assert parts.sockets.receive_buffer_bytes == 4096
    assert parts.sockets.source_address == ("127.0.0.1", 0)
    # TCP_NODELAY comes from ClientConfig.socket_options by default.
    assert (socket.IPPROTO_TCP, socket.TCP_NODELAY, 1) in parts.sockets.socket_options
    assert parts.tls.ssl_server_hostname == "broker.example"
    with pytest.raises(TypeError, match=r"^Test: unknown option 'nope'; .*known_options"):
        make_parts("Test", "h:1", ssl_server_hostname=None, rng=None, options={"nope": 1})
