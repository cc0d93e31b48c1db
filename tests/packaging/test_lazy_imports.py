"""A program imports only what it uses (issue 12, memory).

``import kafkacore`` loads the errors and nothing of the client, consumer or
producer machines; a selector producer loads neither the consumer nor the
admin, the share consumer, ssl, asyncio or OpenSSL's hashlib (SCRAM's); a
consumer loads no producer or admin; on the compiled record path the
pure-Python fallbacks and the codec packages they call stay unloaded. Each
case runs in a fresh interpreter and reads ``sys.modules``: module sets, not
RSS numbers, so nothing here depends on the machine's load. The lazy names
stay part of the public surface: listed by ``dir()``, importable with
``from X import Y`` and the same object as where they are defined.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

# Module families: a family is loaded when the module or any submodule is.
ADMIN = "kafkacore.admin"
SHARE = "kafkacore.share"
CONSUMER = "kafkacore.consumer"
PRODUCER = "kafkacore.producer"
CLIENT = "kafkacore.client"
PURE_RECORDS = (
    "kafkacore.records._decode",
    "kafkacore.records._varint",
    "kafkacore.records._py_builder",
)
CODEC_PACKAGES = ("cramjam", "lz4", "zstandard")

_REPORT = """
import json, sys
print(json.dumps(sorted(sys.modules)))
"""


def loaded_after(code: str, *, pure: bool = False) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    env = dict(os.environ)
    env.pop("KAFKACORE_PURE", None)
    if pure:
        env["KAFKACORE_PURE"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code) + _REPORT],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    modules: list[str] = json.loads(proc.stdout.strip().splitlines()[-1])
    return set(modules)


def families(modules: set[str], *names: str) -> list[str]:
    """Which of ``names`` are loaded, as packages or as any of their submodules."""
    return [n for n in names if any(m == n or m.startswith(n + ".") for m in modules)]


# A client built, not connected: nothing listens on port 1, and close() stops
# the loop thread the blocking clients start at construction. The consumer
# is given a kafka-python option too: checking it needs no other config.
SELECTOR_PRODUCER = """
    import kafkacore
    from kafkacore.transports.selector import KafkaProducer
    producer = KafkaProducer("127.0.0.1:1")
    producer.close(timeout=5)
"""
SELECTOR_CONSUMER = """
    import kafkacore
    from kafkacore.transports.selector import KafkaConsumer
    consumer = KafkaConsumer(
        "t", bootstrap_servers="127.0.0.1:1", group_id="g", metrics_sample_window_ms=30000
    )
    consumer.close()
"""


def test_import_kafkacore_loads_only_the_errors() -> None:
    modules = loaded_after("import kafkacore")
    assert sorted(m for m in modules if m.startswith("kafkacore")) == [
        "kafkacore",
        "kafkacore.errors",
    ]


def test_a_selector_producer_loads_no_consumer_admin_share_ssl_or_asyncio() -> None:
    modules = loaded_after(SELECTOR_PRODUCER)
    assert families(modules, PRODUCER, CLIENT) == [PRODUCER, CLIENT]
    assert families(modules, ADMIN, SHARE, CONSUMER, "ssl", "asyncio", "_hashlib") == []
    # The compiled record path: no pure loops, no codec packages.
    assert "kafkacore.records._native" in modules
    assert families(modules, *PURE_RECORDS, *CODEC_PACKAGES) == []


def test_a_selector_consumer_loads_no_producer_admin_share_ssl_or_asyncio() -> None:
    modules = loaded_after(SELECTOR_CONSUMER)
    assert families(modules, CONSUMER, CLIENT) == [CONSUMER, CLIENT]
    assert families(modules, ADMIN, SHARE, PRODUCER, "ssl", "asyncio", "_hashlib") == []
    assert families(modules, *PURE_RECORDS, *CODEC_PACKAGES) == []


def test_the_pure_path_loads_its_fallbacks_when_it_runs() -> None:
    modules = loaded_after(
        """
        from kafkacore.records import RecordBatchBuilder, compress, Compression, iter_batches
        builder = RecordBatchBuilder(compression=Compression.LZ4)
        builder.append(b"v", b"k", timestamp=1)
        [batch] = iter_batches(builder.build())
        assert [r.value for r in batch] == [b"v"]
        """,
        pure=True,
    )
    assert families(modules, *PURE_RECORDS, "lz4") == [*PURE_RECORDS, "lz4"]
    assert families(modules, "cramjam", "zstandard") == []


def test_tls_and_a_coroutine_credential_provider_import_their_modules_on_first_use() -> None:
    modules = loaded_after(
        """
        import sys
        from kafkacore.client.credentials import CredentialKind
        from kafkacore.client.events import CredentialsNeeded
        from kafkacore.transports import _credentials, _tls
        assert _tls.refused_certificate(OSError("reset")) is None
        assert not _tls.tls_would_block(OSError("reset"))
        assert "ssl" not in sys.modules and "asyncio" not in sys.modules

        async def token() -> str:
            return "t"

        need = CredentialsNeeded(
            request_id=7,
            node_id=1,
            conn_id=1,
            kind=CredentialKind.OAUTH_TOKEN,
            mechanism="OAUTHBEARER",
            call=token,
            deadline=0.0,
        )
        answer = _credentials.fulfil_inline(need)
        assert answer.result == "t", answer
        context = _tls.build_ssl_context(_tls.TlsConfig())
        import ssl
        assert _tls.tls_would_block(ssl.SSLWantReadError())
        assert not _tls.tls_would_block(ssl.SSLError())
        """
    )
    assert families(modules, "ssl", "asyncio") == ["ssl", "asyncio"]


LAZY_MODULES = [
    "kafkacore",
    "kafkacore.transports.selector",
    "kafkacore.transports.asyncio",
    "kafkacore.transports.trio",
]


@pytest.mark.parametrize("name", LAZY_MODULES)
def test_lazy_names_are_listed_importable_and_the_defined_objects(name: str) -> None:
    modules = loaded_after(
        f"""
        import importlib
        module = importlib.import_module({name!r})
        missing = sorted(set(module.__all__) - set(dir(module)))
        assert missing == [], f"dir() lacks {{missing}}"
        for export in module.__all__:
            value = getattr(module, export)
            exec(f"from {name} import {{export}} as again", {{}})
            if isinstance(value, type):  # the class where it is defined
                home = importlib.import_module(value.__module__)
                assert getattr(home, value.__name__) is value, export
        try:
            module.NoSuchName
        except AttributeError as exc:
            assert "NoSuchName" in str(exc)
        else:
            raise AssertionError("a missing name must raise AttributeError")
        """
    )
    assert name in modules


def test_an_address_literal_needs_no_resolver_thread_or_idna_codec() -> None:
    modules = loaded_after(
        """
        import socket
        from kafkacore.transports._sockets import numeric_address
        assert numeric_address("127.0.0.1", 9092) == (socket.AF_INET, ("127.0.0.1", 9092))
        assert numeric_address("::1", 9093) == (socket.AF_INET6, ("::1", 9093))
        for name in ("localhost", "broker-1.example", "fe80::1%eth0", "127.0.0.1\\x00", "é"):
            assert numeric_address(name, 1) is None, name
        """
    )
    assert families(modules, "encodings.idna", "ipaddress", "concurrent.futures.thread") == []
