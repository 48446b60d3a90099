#!/usr/bin/env bash
# Regenerates wardenpb/ (messages and gRPC stubs of the public API) from
# crates/warden-proto/proto with protoc, protoc-gen-go and protoc-gen-go-grpc.
# The two plugins are the versions pinned by this module's go.mod (`tool`
# lines); protoc comes from the system (Debian: protobuf-compiler), and its
# version is written into the generated headers.
#
#   ./gen.sh          regenerate wardenpb/ in place
#   ./gen.sh --check  regenerate into a temp dir and fail (exit 1, with the
#                     diff) when the committed wardenpb/ differs
#
# peer.proto is the nodes' internal service: not generated.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
proto_dir="$here/../../crates/warden-proto/proto"
module="github.com/warden-locks/warden/clients/go"
pkg="$module/wardenpb;wardenpb"
files=(warden.proto lease.proto watch.proto admin.proto)

if ! command -v protoc >/dev/null; then
  echo "gen.sh: protoc not found (Debian: apt-get install protobuf-compiler)" >&2
  exit 2
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/out"
(cd "$here" && go build -o "$work/bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go \
  && go build -o "$work/bin/protoc-gen-go-grpc" google.golang.org/grpc/cmd/protoc-gen-go-grpc)

m_opts=()
for f in "${files[@]}"; do
  m_opts+=("--go_opt=M$f=$pkg" "--go-grpc_opt=M$f=$pkg")
done
PATH="$work/bin:$PATH" protoc \
  -I "$proto_dir" \
  --go_out="$work/out" --go_opt=paths=source_relative \
  --go-grpc_out="$work/out" --go-grpc_opt=paths=source_relative \
  "${m_opts[@]}" \
  "${files[@]}"

if [ "${1:-}" = "--check" ]; then
  if ! diff -ru "$here/wardenpb" "$work/out"; then
    echo "gen.sh --check: wardenpb/ is not what crates/warden-proto/proto generates; run clients/go/gen.sh and commit" >&2
    exit 1
  fi
  echo "gen.sh --check: wardenpb/ is up to date"
  exit 0
fi
rm -rf "$here/wardenpb"
mkdir -p "$here/wardenpb"
cp "$work/out"/*.go "$here/wardenpb/"
echo "gen.sh: regenerated $(ls "$here/wardenpb" | wc -l) files in wardenpb/"
