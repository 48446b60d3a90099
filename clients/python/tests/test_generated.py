"""The committed generated code is what scripts/regen_proto.py makes from
crates/warden-proto/proto today (so the client speaks the server's current
wire)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

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
