"""Mutual TLS options (docs/security.md) with certificates minted by the
binary's own ``warden cert``, against a TLS server that requires a client
certificate (the real server's TLS is exercised by C12 and C13)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import grpc
import pytest

from fake_server import FakeNode
from harness import warden_bin
from warden_client import ClientOptions, TlsConfigError, TlsOptions, UnavailableError, aio


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """DIR/ca.crt, DIR/client.alice.{crt,key} and DIR/node/node.{crt,key}."""
    if not warden_bin().is_file():
        pytest.fail(f"the warden binary {warden_bin()} does not exist (it mints the certificates)", pytrace=False)
    root = tmp_path_factory.mktemp("certs")
    ca_key = root / "ca.key"
    certs_dir = root / "certs"

    def warden(*args: str) -> None:
        subprocess.run([str(warden_bin()), "cert", *args], check=True, capture_output=True, timeout=60)

    warden("create-ca", "--certs-dir", str(certs_dir), "--ca-key", str(ca_key))
    warden("create-client", "alice", "--certs-dir", str(certs_dir), "--ca-key", str(ca_key))
    node_dir = certs_dir / "node"
    node_dir.mkdir()
    shutil.copy(certs_dir / "ca.crt", node_dir / "ca.crt")
    warden("create-node", "--certs-dir", str(node_dir), "--ca-key", str(ca_key), "--id", "1", "127.0.0.1", "localhost")
    return certs_dir


def _server_credentials(certs: Path) -> grpc.ServerCredentials:
    node = certs / "node"
    return grpc.ssl_server_credentials(
        [((node / "node.key").read_bytes(), (node / "node.crt").read_bytes())],
        root_certificates=(certs / "ca.crt").read_bytes(),
        require_client_auth=True,
    )


async def test_a_certs_dir_and_user_connect_with_mutual_tls(certs: Path) -> None:
    """Security: ``TlsOptions.from_certs_dir(DIR, USER)`` reads the CLI's
    layout (ca.crt, client.USER.crt/.key) and connects to a server that
    requires a client certificate, verifying the node's certificate (SAN
    127.0.0.1) against the CA."""
    tls = TlsOptions.from_certs_dir(certs, "alice")
    assert Path(tls.cert_file or "").name == "client.alice.crt"
    async with FakeNode(credentials=_server_credentials(certs)) as node:
        async with aio.Client([node.addr], ClientOptions(tls=tls)) as client:
            status = await client.status("x")
            assert status.read_index == 7
        # The three files given one by one work the same.
        files = TlsOptions(
            ca_file=certs / "ca.crt", cert_file=certs / "client.alice.crt", key_file=certs / "client.alice.key"
        )
        async with aio.Client([node.addr], ClientOptions(tls=files)) as client:
            assert (await client.status("y")).read_index == 7


async def test_without_a_client_certificate_the_server_refuses(certs: Path) -> None:
    """Security: a CA alone (no client certificate) is refused by a server
    that requires one; the client reports the cluster unreachable."""
    async with FakeNode(credentials=_server_credentials(certs)) as node:
        options = ClientOptions(tls=TlsOptions(ca_file=certs / "ca.crt"), deadline_s=1.0)
        async with aio.Client([node.addr], options) as client:
            with pytest.raises(UnavailableError):
                await client.status("x")
        assert node.script.calls == []


def test_unusable_tls_files_are_typed_errors_naming_the_file(certs: Path, tmp_path: Path) -> None:
    """What bad input gets: a missing file, a file that is not PEM, or a
    certificate without its key is a TlsConfigError naming the file, raised
    when the client is built; the key's contents never appear in it."""
    missing = TlsOptions.from_certs_dir(certs, "nobody")
    with pytest.raises(TlsConfigError) as e:
        aio.Client(["127.0.0.1:1"], ClientOptions(tls=missing))
    assert e.value.path.endswith("client.nobody.key") or e.value.path.endswith("client.nobody.crt")
    not_pem = tmp_path / "ca.crt"
    not_pem.write_text("hello")
    with pytest.raises(TlsConfigError) as e:
        aio.Client(["127.0.0.1:1"], ClientOptions(tls=TlsOptions(ca_file=not_pem)))
    assert e.value.path == str(not_pem) and "PEM" in str(e.value)
    with pytest.raises(TlsConfigError):
        TlsOptions(ca_file=certs / "ca.crt", cert_file=certs / "client.alice.crt").channel_credentials()
    wrong_kind = TlsOptions(
        ca_file=certs / "ca.crt", cert_file=certs / "client.alice.crt", key_file=certs / "client.alice.crt"
    )
    with pytest.raises(TlsConfigError) as e:
        wrong_kind.channel_credentials()
    key_text = (certs / "client.alice.key").read_text()
    assert key_text.splitlines()[1] not in str(e.value)
