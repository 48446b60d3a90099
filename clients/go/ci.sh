#!/usr/bin/env bash
# The Go client's CI step, for .ci/run (after the Rust build, so that the
# warden binary exists): checks that wardenpb/ is what the proto generates,
# then `go vet ./...` and `go test -p 1 ./...` (unit tests and conformance
# C01-C17 against real three-node clusters started from WARDEN_BIN, one
# package at a time so that no two clusters run at once).
#
# Needs: Go (the version go.mod names; GOTOOLCHAIN may fetch it), the Go
# module proxy, and protoc (installed from Debian's protobuf-compiler with
# apt-get when missing and running as root). Env: WARDEN_BIN (default
# ../../target/debug/warden).
set -euo pipefail
cd "$(dirname "$0")"
start=$(date +%s)

if ! command -v go >/dev/null; then
  echo "ci.sh: go not found (https://go.dev/dl/; go.mod names the version)" >&2
  exit 2
fi
if ! command -v protoc >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "ci.sh: installing protoc (Debian protobuf-compiler)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq protobuf-compiler >/dev/null
  else
    echo "ci.sh: protoc not found and cannot install it (needs root and apt-get): apt-get install protobuf-compiler" >&2
    exit 2
  fi
fi

go mod download
./gen.sh --check

export WARDEN_BIN=${WARDEN_BIN:-$(pwd)/../../target/debug/warden}
if [ ! -x "$WARDEN_BIN" ]; then
  echo "ci.sh: no warden binary at $WARDEN_BIN (cargo build -p warden, or set WARDEN_BIN)" >&2
  exit 2
fi

go vet ./...
go test -p 1 -count=1 ./...

echo "ci.sh: Go client checks and suite took $(($(date +%s) - start)) s"
