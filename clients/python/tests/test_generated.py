"""The committed generated code is what scripts/regen_proto.py makes from
crates/warden-proto/proto today (so the client speaks the server's current
wire), and the pending CancelWait shape matches the server's once it has one."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from warden_client._proto import warden_pb2, warden_pending_pb2

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
COMMITTED = PACKAGE_ROOT / "src" / "warden_client" / "_proto"


def _regen_module() -> object:
    spec = importlib.util.spec_from_file_location("regen_proto", PACKAGE_ROOT / "scripts" / "regen_proto.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["regen_proto"] = module
    spec.loader.exec_module(module)
    return module


def test_regeneration_changes_nothing(tmp_path: Path) -> None:
    """The generated code in the package equals a fresh generation from the
    server's protos (run scripts/regen_proto.py after changing a .proto)."""
    regen = _regen_module()
    if not (getattr(regen, "SERVER_PROTO_DIR")).is_dir():
        pytest.skip("crates/warden-proto/proto is not next to this package (an installed copy)")
    written = regen.generate(tmp_path)  # type: ignore[attr-defined]
    fresh = {p.name: p.read_text(encoding="utf-8") for p in written}
    committed = {p.name: p.read_text(encoding="utf-8") for p in COMMITTED.iterdir() if p.is_file()}
    assert sorted(fresh) == sorted(committed), "generated files added or removed: run scripts/regen_proto.py"
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert stale == [], f"stale generated files {stale}: run `python scripts/regen_proto.py` from clients/python"


def test_the_pending_cancel_wait_matches_the_servers_once_it_has_one() -> None:
    """The client's stand-in CancelWait messages (proto_pending) have the
    planned field names, numbers and types; once warden.proto defines them,
    the server's must be the same (then proto_pending can go)."""

    def shape(message: object) -> list[tuple[str, int, int]]:
        fields = message.DESCRIPTOR.fields  # type: ignore[attr-defined]
        return [(f.name, f.number, f.type) for f in fields]

    pending_request = shape(warden_pending_pb2.CancelWaitRequest)
    pending_response = shape(warden_pending_pb2.CancelWaitResponse)
    assert [(n, i) for n, i, _ in pending_request] == [("header", 1), ("acquire_request_id", 2), ("resource", 3)]
    assert [(n, i) for n, i, _ in pending_response] == [
        ("resource", 1),
        ("lease_id", 2),
        ("outcome", 3),
        ("fencing_token", 4),
    ]
    if not hasattr(warden_pb2, "CancelWaitRequest"):
        pytest.skip("warden.proto has no CancelWait yet: only the pending shape is checked")
    assert shape(getattr(warden_pb2, "CancelWaitRequest")) == pending_request
    assert shape(getattr(warden_pb2, "CancelWaitResponse")) == pending_response
