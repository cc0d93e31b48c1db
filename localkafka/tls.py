"""A throwaway CA, a server certificate for the SSL listeners and a client
certificate for the MTLS listener.

The CA and leaf are made in Python with ``trustme`` (a dev dependency). The
leaf names ``127.0.0.1`` and ``localhost`` so clients can keep hostname checks
on. Kafka's PEM keystore (KIP-651, ``ssl.keystore.type=PEM``) wants the key in
PKCS#8 followed by the certificate chain in one file; trustme emits
traditional-format EC keys, so the key is re-serialised here. The client
certificate (common name ``MTLS_CLIENT_CN``) and its key are written as two
PEM files, the form ``ssl.SSLContext.load_cert_chain`` (and so kafkacore's
``ssl_certfile``/``ssl_keyfile``) takes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kafkacore.testing.config import MTLS_CLIENT_CN

__all__ = ["TlsFiles", "make_tls_files"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsFiles:
    ca_file: Path
    keystore: Path
    client_cert: Path
    client_key: Path


def make_tls_files(directory: Path) -> TlsFiles:
    """Write ``ca.pem``, ``server-keystore.pem``, ``client-cert.pem`` and
    ``client-key.pem`` into ``directory``."""
    try:
        import trustme
        from cryptography.hazmat.primitives import serialization
    except ImportError as exc:  # pragma: no cover - dev extra missing
        raise RuntimeError(
            "localkafka: SSL listeners need the 'trustme' package; "
            "install the project with pip install -e '.[dev]'"
        ) from exc
    ca = trustme.CA(organization_name="localkafka test CA")
    leaf = ca.issue_cert("127.0.0.1", "localhost")
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
    pkcs8 = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    ca_file = directory / "ca.pem"
    keystore = directory / "server-keystore.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    keystore.write_bytes(pkcs8 + b"".join(b.bytes() for b in leaf.cert_chain_pems))
    keystore.chmod(0o600)
    client = ca.issue_cert(MTLS_CLIENT_CN, common_name=MTLS_CLIENT_CN)
    client_cert = directory / "client-cert.pem"
    client_key = directory / "client-key.pem"
    client_cert.write_bytes(b"".join(b.bytes() for b in client.cert_chain_pems))
    client_key.write_bytes(client.private_key_pem.bytes())
    client_key.chmod(0o600)
    return TlsFiles(
        ca_file=ca_file, keystore=keystore, client_cert=client_cert, client_key=client_key
    )
