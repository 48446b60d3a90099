#!/usr/bin/env bash
# The Node client's CI step, for .ci/run (after the Rust build, so that the
# warden binary exists): a clean install from the lockfile (npm ci, from the
# npm registry; no protoc, nothing native), the check that the proto copies
# and generated types are what crates/warden-proto/proto gives, the build and
# a strict type check, then `npm test` (unit and fake-node tests, and
# conformance C01-C17 against one real three-node cluster on mutual TLS
# started from WARDEN_BIN). Prints how long it took.
#
# Needs: Node.js >= 20 with npm. Env: WARDEN_BIN (default ../../target/debug/warden).
set -euo pipefail
cd "$(dirname "$0")"
start=$(date +%s)

node -e 'const [M] = process.versions.node.split(".").map(Number); if (M < 20) { console.error("Node >= 20 is required, found " + process.version); process.exit(2) }'

export WARDEN_BIN=${WARDEN_BIN:-$(pwd)/../../target/debug/warden}
if [ ! -x "$WARDEN_BIN" ]; then
  echo "ci.sh: no warden binary at $WARDEN_BIN (cargo build -p warden, or set WARDEN_BIN)" >&2
  exit 2
fi

rm -rf dist build
npm ci --no-audit --no-fund
npm run --silent gen:check
npm run --silent build
npm run --silent typecheck
npm test

echo "ci.sh: Node client checks and suite took $(($(date +%s) - start)) s"
