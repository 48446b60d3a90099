"""Regenerates the committed gRPC code in src/warden_client/_proto/.

Input: the server's public protos (crates/warden-proto/proto: warden, lease,
watch, admin; peer.proto is internal and skipped). Generators:
grpcio-tools (messages and stubs) and mypy-protobuf (type stubs), at the
versions pinned in pyproject.toml's `dev` extra, so the output is
byte-for-byte reproducible. tests/test_generated.py runs this into a temp dir
and fails if the committed files differ.

Usage, from clients/python:  python scripts/regen_proto.py [--out DIR]
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent
REPO_ROOT = PACKAGE_ROOT.parent.parent
SERVER_PROTO_DIR = REPO_ROOT / "crates" / "warden-proto" / "proto"
DEFAULT_OUT = PACKAGE_ROOT / "src" / "warden_client" / "_proto"

# peer.proto is the nodes' internal service: not part of the client API.
SERVER_PROTOS = ("warden.proto", "lease.proto", "watch.proto", "admin.proto")

HEADER = '"""Generated from crates/warden-proto/proto by scripts/regen_proto.py; do not edit."""\n'

# grpcio-tools writes `import warden_pb2 as warden__pb2` (a top-level import);
# inside a package the sibling module must be imported relatively.
_ABSOLUTE_IMPORT = re.compile(r"^import (\w+_pb2) as (\w+)$", re.MULTILINE)
_STUB_IMPORT = re.compile(r"^import (\w+_pb2)$", re.MULTILINE)


def _plugin(name: str) -> str:
    """The path of a protoc plugin installed next to this interpreter."""
    candidate = Path(sys.executable).parent / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"{name} not found: pip install './clients/python[dev]' (mypy-protobuf)")
    return found


def _relative_imports(text: str) -> str:
    text = _ABSOLUTE_IMPORT.sub(r"from . import \1 as \2", text)
    return _STUB_IMPORT.sub(r"from . import \1", text)


def generate(out: Path) -> list[Path]:
    """Generates every module into `out` (created); returns the files written."""
    import grpc_tools
    from grpc_tools import protoc  # dev dependency: imported only when generating

    well_known = Path(grpc_tools.__file__).parent / "_proto"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        raw = Path(scratch)
        sources = [str(SERVER_PROTO_DIR / p) for p in SERVER_PROTOS]
        args = [
            "grpc_tools.protoc",
            f"-I{SERVER_PROTO_DIR}",
            f"-I{well_known}",
            f"--plugin=protoc-gen-mypy={_plugin('protoc-gen-mypy')}",
            f"--plugin=protoc-gen-mypy_grpc={_plugin('protoc-gen-mypy_grpc')}",
            f"--python_out={raw}",
            f"--grpc_python_out={raw}",
            f"--mypy_out={raw}",
            f"--mypy_grpc_out={raw}",
            *sources,
        ]
        code = protoc.main(args)
        if code != 0:
            raise SystemExit(f"protoc failed with exit code {code}")
        written = []
        for path in sorted(raw.iterdir()):
            text = _relative_imports(path.read_text(encoding="utf-8"))
            if path.suffix == ".py":
                text = HEADER + text
            target = out / path.name
            target.write_text(text, encoding="utf-8")
            written.append(target)
        init = out / "__init__.py"
        init.write_text(HEADER, encoding="utf-8")
        written.append(init)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    args = parser.parse_args()
    out: Path = args.out
    if out.exists():
        for old in out.iterdir():
            if old.is_file():
                old.unlink()
    for path in generate(out):
        print(path.relative_to(out.parent) if out == DEFAULT_OUT else path)


if __name__ == "__main__":
    main()
