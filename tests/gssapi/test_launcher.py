"""The launcher's Kerberos option, without starting anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkacore.errors import AuthenticationError
from kafkacore.testing.cluster import LocalKafka
from kafkacore.testing.kerberos import (
    LocalKdc,
    broker_jvm_flags,
    broker_overrides,
    render_krb5_conf,
)
from kafkacore.transports._gssapi import KerberosClient


def test_krb5_conf_names_only_the_local_kdc_over_tcp() -> None:
    text = render_krb5_conf(4321)
    assert "kdc = 127.0.0.1:4321" in text
    assert "udp_preference_limit = 1" in text
    assert "dns_canonicalize_hostname = false" in text
    assert "default_realm = EXAMPLE.COM" in text


def test_gssapi_is_enabled_on_sasl_listeners_only(tmp_path: Path) -> None:
    kdc = LocalKdc(workdir=tmp_path)
    props = broker_overrides(kdc, ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL"))
    assert "GSSAPI" in props["sasl.enabled.mechanisms"].split(",")
    jaas_keys = sorted(k for k in props if k.endswith(".gssapi.sasl.jaas.config"))
    assert jaas_keys == [
        "listener.name.sasl_plaintext.gssapi.sasl.jaas.config",
        "listener.name.sasl_ssl.gssapi.sasl.jaas.config",
    ]
    jaas = props[jaas_keys[0]]
    assert 'principal="kafka/localhost@EXAMPLE.COM"' in jaas
    assert str(tmp_path / "kafka_localhost.keytab") in jaas
    assert broker_jvm_flags(kdc) == [f"-Djava.security.krb5.conf={tmp_path / 'krb5.conf'}"]


def test_default_broker_has_no_kerberos(tmp_path: Path) -> None:
    kafka = LocalKafka(listeners=("PLAINTEXT", "SASL_PLAINTEXT"), workdir=tmp_path)
    assert kafka.kerberos is None
    assert kafka._overrides == {}
    assert kafka._extra_jvm == []


def test_user_overrides_win_over_kerberos_defaults(tmp_path: Path) -> None:
    kdc = LocalKdc(workdir=tmp_path)
    kafka = LocalKafka(
        listeners=("PLAINTEXT", "SASL_PLAINTEXT"),
        workdir=tmp_path,
        kerberos=kdc,
        overrides={"sasl.enabled.mechanisms": "GSSAPI"},
    )
    assert kafka._overrides["sasl.enabled.mechanisms"] == "GSSAPI"
    assert "listener.name.sasl_plaintext.gssapi.sasl.jaas.config" in kafka._overrides


def test_missing_client_keytab_is_refused_up_front(tmp_path: Path) -> None:
    with pytest.raises(AuthenticationError, match="does not exist"):
        KerberosClient(keytab=str(tmp_path / "nope.keytab"))
