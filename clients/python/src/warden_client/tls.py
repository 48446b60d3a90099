"""Mutual TLS options, as the ``warden`` CLI takes them.

Either the three files (the cluster's CA bundle, this principal's certificate
and its key), or a certs dir and a user: ``DIR/ca.crt``,
``DIR/client.USER.crt``, ``DIR/client.USER.key`` (what ``warden cert
create-client USER --certs-dir DIR`` writes). The server authenticates the
principal from the certificate (docs/security.md); nothing the client sends in
a request can name another one. A CA alone (no certificate) is enough for
gRPC's health service.

The files are read when a client is built; a missing or malformed one raises
:class:`~warden_client.errors.TlsConfigError` naming the file. The key's
contents are never logged or put in an error.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import grpc

from .errors import TlsConfigError

#: The CLI's default principal.
DEFAULT_USER = "root"


@dataclass(frozen=True)
class TlsOptions:
    """``ca_file``: PEM CA bundle the servers' certificates must chain to.
    ``cert_file`` and ``key_file``: this principal's PEM certificate and key
    (both or neither). ``server_name``: the name to verify the servers'
    certificates against instead of each endpoint's host (rarely needed: node
    certificates carry ``127.0.0.1`` and ``localhost`` and the names they are
    dialled by)."""

    ca_file: str | os.PathLike[str]
    cert_file: str | os.PathLike[str] | None = None
    key_file: str | os.PathLike[str] | None = None
    server_name: str | None = None

    @classmethod
    def from_certs_dir(cls, certs_dir: str | os.PathLike[str], user: str = DEFAULT_USER) -> TlsOptions:
        """The CLI's layout: ``ca.crt``, ``client.USER.crt``, ``client.USER.key``."""
        root = Path(certs_dir)
        return cls(
            ca_file=root / "ca.crt",
            cert_file=root / f"client.{user}.crt",
            key_file=root / f"client.{user}.key",
        )

    def channel_credentials(self) -> grpc.ChannelCredentials:
        """Reads the files and builds the channel credentials."""
        if (self.cert_file is None) != (self.key_file is None):
            raise TlsConfigError(
                str(self.cert_file if self.cert_file is not None else self.key_file),
                "a client certificate needs its key and a key its certificate (give both or neither)",
            )
        ca = _read_pem(self.ca_file, "CERTIFICATE")
        cert = _read_pem(self.cert_file, "CERTIFICATE") if self.cert_file is not None else None
        key = _read_pem(self.key_file, "PRIVATE KEY") if self.key_file is not None else None
        return grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert)

    def channel_options(self) -> list[tuple[str, str]]:
        if self.server_name:
            return [("grpc.ssl_target_name_override", self.server_name)]
        return []


def _read_pem(path: str | os.PathLike[str], kind: str) -> bytes:
    name = os.fspath(path)
    try:
        data = Path(name).read_bytes()
    except FileNotFoundError:
        raise TlsConfigError(name, "missing (no such file)") from None
    except OSError as e:
        raise TlsConfigError(name, f"cannot be read ({e.strerror})") from None
    # "PRIVATE KEY" also matches "EC PRIVATE KEY" / "RSA PRIVATE KEY" headers.
    if b"-----BEGIN " not in data or kind.encode() not in data:
        raise TlsConfigError(name, f"not a PEM file with a {kind} block")
    return data
