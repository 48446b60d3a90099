#!/usr/bin/env bash
# Fails when a scenario id of scenarios.md has no test in one of the five
# clients: each test carries the marker `conformance: CNN-short-name`.
set -euo pipefail
cd "$(dirname "$0")/../.."

ids=$(grep -oE '^## C[0-9]{2}-[a-z0-9-]+' clients/conformance/scenarios.md | sed 's/^## //')
declare -A where=(
  [rust]=crates/warden/tests
  [go]=clients/go
  [python]=clients/python/tests
  [java]=clients/java/src/test
  [node]=clients/node/test
)
missing=0
for id in $ids; do
  for client in rust go python java node; do
    dir=${where[$client]}
    if [ ! -d "$dir" ] || ! grep -rqF "conformance: $id" "$dir"; then
      echo "missing: $client has no test marked 'conformance: $id' (in $dir)"
      missing=1
    fi
  done
done
if [ "$missing" = 0 ]; then
  echo "conformance: every scenario has a test in every client ($(echo "$ids" | wc -w) scenarios)"
fi
exit "$missing"
