#!/usr/bin/env bash
# CI entry point of the Java client: builds it, runs its unit tests and the conformance
# scenarios (clients/conformance/scenarios.md) against a real three-node cluster started from
# WARDEN_BIN, and prints how long that took.
#
#   WARDEN_BIN   the warden binary under test (default: the workspace's target/debug/warden,
#                built with `cargo build -p warden`)
#   MVN          the Maven command (default: mvn)
#
# Needs a JDK 17+ and Maven; dependencies (grpc-java, protobuf-java, protoc and the grpc-java
# protoc plugin as Maven artifacts) come from the Maven registry. The cluster tests run one at a
# time in one JVM (surefire's default), on 127.0.0.1 with ports from :0.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

WARDEN_BIN="${WARDEN_BIN:-$here/../../target/debug/warden}"
if [ ! -x "$WARDEN_BIN" ]; then
  echo "clients/java/ci.sh: no executable warden binary at $WARDEN_BIN" >&2
  echo "  build it with 'cargo build -p warden' or set WARDEN_BIN" >&2
  exit 1
fi
WARDEN_BIN="$(cd "$(dirname "$WARDEN_BIN")" && pwd)/$(basename "$WARDEN_BIN")"
export WARDEN_BIN
MVN="${MVN:-mvn}"

echo "clients/java: mvn verify with WARDEN_BIN=$WARDEN_BIN"
reports="$here/target/surefire-reports"
rm -rf "$reports" # no stale summaries from an earlier run
start=$(date +%s)
status=0
"$MVN" -q -B -Dstyle.color=never verify || status=$?
elapsed=$(( $(date +%s) - start ))
if [ -d "$reports" ]; then
  # Surefire's own per-class summaries, so a quiet (-q) run still says what ran, and the total.
  summaries=$(cat "$reports"/*.txt 2>/dev/null | grep -E '^Tests run:' || true)
  echo "$summaries"
  echo "$summaries" | awk -F'[:,] *' '
    /^Tests run:/ { run += $2; failed += $4 + $6; skipped += $8 }
    END { printf "java: %d passed, %d failed, %d skipped\n", run - failed - skipped, failed, skipped }'
fi
printf 'clients/java: mvn verify took %dm%02ds (exit %d)\n' $((elapsed / 60)) $((elapsed % 60)) "$status"
exit "$status"
