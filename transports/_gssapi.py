"""Kerberos for SASL GSSAPI through MIT's ``libgssapi_krb5`` via ctypes.

Theory of operation
-------------------
:class:`KerberosClient` holds one initiator credential, acquired from a
client keytab with MIT's ``gss_acquire_cred_from`` into a private in-memory
credential cache (no ``kinit``, no shared ticket cache). Every connection
gets a fresh :class:`MitGssContext` (``gss_init_sec_context`` steps,
``gss_wrap``/``gss_unwrap``) that :class:`kafkacore.client.gssapi.GssapiMechanism`
drives. Only the runtime library is needed (Debian ``libgssapi-krb5-2``),
no headers and no compiled Python package. MIT reads ``KRB5_CONFIG`` (or
``/etc/krb5.conf``) at first use.

Blocking: the first context step may ask the KDC for a service ticket (a
short TCP/UDP exchange done by the C library, on the calling thread).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import itertools
import os
from collections.abc import Callable, Iterator
from typing import Any

from kafkacore.client.gssapi import GssContext, gssapi_mechanism_factory
from kafkacore.client.sasl import SaslMechanism
from kafkacore.errors import AuthenticationError

__all__ = ["KerberosClient", "MitGssContext", "kerberos_mechanism_factory", "load_library"]

_OM = ctypes.c_uint32


class _Oid(ctypes.Structure):
    _fields_ = [("length", _OM), ("elements", ctypes.c_void_p)]


class _Buffer(ctypes.Structure):
    _fields_ = [("length", ctypes.c_size_t), ("value", ctypes.c_void_p)]


class _KeyValue(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char_p), ("value", ctypes.c_char_p)]


class _KeyValueSet(ctypes.Structure):
    _fields_ = [("count", _OM), ("elements", ctypes.POINTER(_KeyValue))]


_OID_BYTES = {
    # 1.2.840.113554.1.2.2: the Kerberos V5 mechanism (RFC 1964).
    "krb5": b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x02",
    # 1.2.840.113554.1.2.1.4: GSS_C_NT_HOSTBASED_SERVICE, "service@host".
    "hostbased": b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x01\x04",
    # 1.2.840.113554.1.2.2.1: GSS_KRB5_NT_PRINCIPAL_NAME, "user@REALM".
    "principal": b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x02\x01",
}
_OID_STORE = {k: ctypes.create_string_buffer(v, len(v)) for k, v in _OID_BYTES.items()}
_OIDS = {
    k: _Oid(len(_OID_BYTES[k]), ctypes.cast(buf, ctypes.c_void_p)) for k, buf in _OID_STORE.items()
}

_S_CONTINUE_NEEDED = 1
_ERROR_MASK = 0xFFFF0000  # calling and routine error fields (RFC 2744 section 3.9.1)
_C_INITIATE = 1
_C_GSS_CODE = 1
_C_MECH_CODE = 2
# What the JDK's GSSAPI SaslClient asks for: mutual auth, integrity, confidentiality.
_REQ_FLAGS = 2 | 16 | 32
# A wrapped SASL message is 4 bytes plus an authorization id; anything huge is wrong.
_MAX_TOKEN = 1 << 20

_lib: Any = None
_ccache_ids = itertools.count(1)


def load_library() -> Any:
    """Load ``libgssapi_krb5`` once; AuthenticationError says what to install if absent."""
    global _lib
    if _lib is not None:
        return _lib
    name = ctypes.util.find_library("gssapi_krb5") or "libgssapi_krb5.so.2"
    try:
        lib = ctypes.CDLL(name)
        lib.gss_acquire_cred_from  # noqa: B018 - MIT-only entry point, checked here
    except (OSError, AttributeError) as exc:
        raise AuthenticationError(
            f"GSSAPI: MIT Kerberos library {name!r} not usable ({exc}); "
            "install libgssapi-krb5-2 (Debian) or krb5-libs (RHEL)"
        ) from None
    _lib = lib
    return lib


def _status_lines(lib: Any, code: int, kind: int) -> Iterator[str]:
    minor = _OM()
    context = _OM(0)
    for _ in range(8):  # the library hands out one line per call
        buf = _Buffer()
        lib.gss_display_status(
            ctypes.byref(minor), _OM(code), kind, None, ctypes.byref(context), ctypes.byref(buf)
        )
        if buf.length:
            yield ctypes.string_at(buf.value, buf.length).decode(errors="replace")
        lib.gss_release_buffer(ctypes.byref(minor), ctypes.byref(buf))
        if context.value == 0:
            return


def _check(lib: Any, what: str, major: int, minor: _OM) -> int:
    if major & _ERROR_MASK:
        words = [*_status_lines(lib, major, _C_GSS_CODE)]
        if minor.value:
            words += _status_lines(lib, minor.value, _C_MECH_CODE)
        raise AuthenticationError(f"GSSAPI: {what} failed: {'; '.join(words)}")
    return major


def _take(lib: Any, buf: _Buffer) -> bytes:
    minor = _OM()
    try:
        if buf.length > _MAX_TOKEN:
            raise AuthenticationError(f"GSSAPI: token of {buf.length} bytes exceeds {_MAX_TOKEN}")
        return ctypes.string_at(buf.value, buf.length) if buf.length else b""
    finally:
        lib.gss_release_buffer(ctypes.byref(minor), ctypes.byref(buf))


def _in_buffer(data: bytes) -> tuple[_Buffer, Any]:
    raw = ctypes.create_string_buffer(data, len(data))
    return _Buffer(len(data), ctypes.cast(raw, ctypes.c_void_p)), raw


def _import_name(lib: Any, text: str, kind: str) -> ctypes.c_void_p:
    minor = _OM()
    name = ctypes.c_void_p()
    buf, _keep = _in_buffer(text.encode())
    major = lib.gss_import_name(
        ctypes.byref(minor), ctypes.byref(buf), ctypes.byref(_OIDS[kind]), ctypes.byref(name)
    )
    _check(lib, f"importing name {text!r}", major, minor)
    return name


class KerberosClient:
    """A client principal's credential from a keytab, shared by its connections."""

    def __init__(self, *, keytab: str, principal: str | None = None) -> None:
        self._cred = ctypes.c_void_p()
        if not os.path.isfile(keytab):
            raise AuthenticationError(f"GSSAPI: client keytab {keytab!r} does not exist")
        self.keytab = keytab
        self.principal = principal
        self._lib = load_library()
        # A private MEMORY cache per client, so tickets never leak into (or come
        # from) the user's default cache.
        self._ccache = f"MEMORY:kafkacore-{os.getpid()}-{next(_ccache_ids)}"

    def credential(self) -> ctypes.c_void_p:
        """The initiator credential, acquired on first use."""
        if self._cred.value:
            return self._cred
        lib = self._lib
        minor = _OM()
        name = ctypes.c_void_p()
        if self.principal:
            name = _import_name(lib, self.principal, "principal")
        pairs = [(b"client_keytab", self.keytab.encode()), (b"ccache", self._ccache.encode())]
        elements = (_KeyValue * len(pairs))(*[_KeyValue(k, v) for k, v in pairs])
        store = _KeyValueSet(len(pairs), elements)
        try:
            major = lib.gss_acquire_cred_from(
                ctypes.byref(minor),
                name,
                _OM(0),
                None,
                _C_INITIATE,
                ctypes.byref(store),
                ctypes.byref(self._cred),
                None,
                None,
            )
            _check(lib, f"acquiring credentials from keytab {self.keytab}", major, minor)
        finally:
            if name.value:
                lib.gss_release_name(ctypes.byref(_OM()), ctypes.byref(name))
        return self._cred

    def new_context(self, target: str) -> MitGssContext:
        return MitGssContext(self, target)

    def close(self) -> None:
        if self._cred.value:
            self._lib.gss_release_cred(ctypes.byref(_OM()), ctypes.byref(self._cred))

    def __del__(self) -> None:
        self.close()


class MitGssContext:
    """One initiator security context towards ``target`` (``service@host``)."""

    def __init__(self, client: KerberosClient, target: str) -> None:
        self._client = client
        self._lib = client._lib
        self.target = target
        self._ctx = ctypes.c_void_p()
        self._established = False

    @property
    def established(self) -> bool:
        return self._established

    def step(self, token: bytes | None) -> bytes:
        lib = self._lib
        cred = self._client.credential()
        target = _import_name(lib, self.target, "hostbased")
        minor = _OM()
        out = _Buffer()
        in_buf, _keep = _in_buffer(token or b"")
        try:
            major = lib.gss_init_sec_context(
                ctypes.byref(minor),
                cred,
                ctypes.byref(self._ctx),
                target,
                ctypes.byref(_OIDS["krb5"]),
                _OM(_REQ_FLAGS),
                _OM(0),
                None,
                ctypes.byref(in_buf) if token is not None else None,
                None,
                ctypes.byref(out),
                None,
                None,
            )
            data = _take(lib, out)
            _check(lib, f"security context for {self.target}", major, minor)
        finally:
            lib.gss_release_name(ctypes.byref(_OM()), ctypes.byref(target))
        self._established = not major & _S_CONTINUE_NEEDED
        return data

    def wrap(self, data: bytes) -> bytes:
        lib = self._lib
        minor = _OM()
        in_buf, _keep = _in_buffer(data)
        out = _Buffer()
        major = lib.gss_wrap(
            ctypes.byref(minor), self._ctx, 0, _OM(0), ctypes.byref(in_buf), None, ctypes.byref(out)
        )
        wrapped = _take(lib, out)
        _check(lib, "wrap", major, minor)
        return wrapped

    def unwrap(self, data: bytes) -> bytes:
        if len(data) > _MAX_TOKEN:
            raise AuthenticationError(f"GSSAPI: server token of {len(data)} bytes is too big")
        lib = self._lib
        minor = _OM()
        in_buf, _keep = _in_buffer(data)
        out = _Buffer()
        major = lib.gss_unwrap(
            ctypes.byref(minor), self._ctx, ctypes.byref(in_buf), ctypes.byref(out), None, None
        )
        plain = _take(lib, out)
        _check(lib, "unwrap of the server's message", major, minor)
        return plain

    def __del__(self) -> None:
        if self._ctx.value:
            self._lib.gss_delete_sec_context(ctypes.byref(_OM()), ctypes.byref(self._ctx), None)


def kerberos_mechanism_factory(
    *,
    keytab: str,
    principal: str | None = None,
    service_name: str = "kafka",
    domain_name: str | None = None,
) -> Callable[[str, str], SaslMechanism]:
    """A ``ClientConfig.sasl_mechanism_factory`` authenticating with a keytab.

    ``domain_name`` names the broker host in its service principal when the
    address the client connects to differs (an IP, a load balancer).
    """
    client = KerberosClient(keytab=keytab, principal=principal)

    def new_context(target: str) -> GssContext:
        return client.new_context(target)

    return gssapi_mechanism_factory(new_context, service_name=service_name, domain_name=domain_name)
