#!/usr/bin/env bash
# The Python client's CI step, for .ci/run (after the Rust build, so that the
# warden binary exists): a throw-away virtualenv, this package installed from
# the folder with its dev extra (PyPI supplies the dependencies, grpcio-tools
# included: no system protoc is needed), then its checks (ruff, mypy, the
# check that regenerating the gRPC code changes nothing) and its suite with
# plain `pytest` (unit tests and conformance C01-C17 against one real
# three-node cluster on mutual TLS started from WARDEN_BIN). Prints how long
# it took.
#
# Needs: Python >= 3.11 with venv, and PyPI. Env: PYTHON (default python3),
# WARDEN_BIN (default ../../target/debug/warden).
set -euo pipefail
cd "$(dirname "$0")"
start=$(date +%s)

python=${PYTHON:-python3}
"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is required, found " + sys.version)'

export WARDEN_BIN=${WARDEN_BIN:-$(pwd)/../../target/debug/warden}
if [ ! -x "$WARDEN_BIN" ]; then
  echo "ci.sh: no warden binary at $WARDEN_BIN (cargo build -p warden, or set WARDEN_BIN)" >&2
  exit 2
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
"$python" -m venv "$scratch/venv"
pip=("$scratch/venv/bin/pip" --disable-pip-version-check -q)
"${pip[@]}" install '.[dev]'  # not editable: the suite runs against the installed package

"$scratch/venv/bin/ruff" check .
"$scratch/venv/bin/ruff" format --check .
"$scratch/venv/bin/mypy"
(export PATH="$scratch/venv/bin:$PATH" && pytest -q -rs -p no:cacheprovider)

echo "ci.sh: Python client checks and suite took $(($(date +%s) - start)) s"
