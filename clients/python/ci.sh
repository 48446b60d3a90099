#!/usr/bin/env bash
# The Python client's CI step, for .ci/run (after the Rust build, so that the
# warden binary exists): a throw-away virtualenv, this package installed from
# the folder with its dev extra (PyPI supplies the dependencies), then its
# checks and its suite (unit tests and conformance C01-C13 against real
# clusters started from WARDEN_BIN).
#
# Needs: Python >= 3.11 with venv, and PyPI. Env: PYTHON (default python3),
# WARDEN_BIN (default ../../target/debug/warden).
set -euo pipefail
cd "$(dirname "$0")"

python=${PYTHON:-python3}
"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is required, found " + sys.version)'

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
"$python" -m venv "$scratch/venv"
pip=("$scratch/venv/bin/pip" --disable-pip-version-check -q)
"${pip[@]}" install '.[dev]'  # not editable: the suite runs against the installed package

export WARDEN_BIN=${WARDEN_BIN:-$(pwd)/../../target/debug/warden}
"$scratch/venv/bin/ruff" check .
"$scratch/venv/bin/ruff" format --check .
"$scratch/venv/bin/mypy"
"$scratch/venv/bin/pytest" -q -rs -p no:cacheprovider
