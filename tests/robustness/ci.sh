#!/usr/bin/env bash
# The robustness suite's CI step, for .ci/run (after the Rust build, so that
# the warden binary exists): go vet, then `go test` of this module: the
# model unit tests, a check that the nemesis's partitions and pauses are
# real, a mutated answer and a lying client caught, and two seeded schedules
# of faults (45 s each by default; about 3.5 minutes in all on 2 cores).
# Prints one verdict line per schedule and a final line; the histories,
# verdicts and (on failure) Porcupine's HTML visualizations stay in
# ROBUSTNESS_OUT (default: a new temp dir).
#
# Env: WARDEN_BIN (default ../../target/debug/warden); ROBUSTNESS_SEEDS
# (default 1,2); ROBUSTNESS_DURATION (per schedule, default 45s; e.g. 1h for
# the long run); ROBUSTNESS_OUT; ROBUSTNESS_MUTATE=1 corrupts one answer per
# schedule (the verdict must then be FAIL).
set -euo pipefail
cd "$(dirname "$0")"
start=$(date +%s)

if ! command -v go >/dev/null; then
  echo "robustness: go not found (go.mod names the version)" >&2
  exit 2
fi
export WARDEN_BIN=${WARDEN_BIN:-$(pwd)/../../target/debug/warden}
if [ ! -x "$WARDEN_BIN" ]; then
  echo "robustness: no warden binary at $WARDEN_BIN (cargo build -p warden, or set WARDEN_BIN)" >&2
  exit 2
fi
export ROBUSTNESS_OUT=${ROBUSTNESS_OUT:-$(mktemp -d -t warden-robustness-out-XXXXXX)}
mkdir -p "$ROBUSTNESS_OUT"

# go test's own timeout: the schedules plus room for startup and checks.
dur=${ROBUSTNESS_DURATION:-45s}
seeds=${ROBUSTNESS_SEEDS:-1,2}
n=$(tr ',' '\n' <<<"$seeds" | grep -c .)
secs=$(go run ./cmd/seconds "$dur")
timeout=$(( n * (secs * 3 / 2 + 120) + 300 ))s

go mod download
go vet ./...
status=0
go test -count=1 -timeout "$timeout" -v . 2>&1 | tee "$ROBUSTNESS_OUT/go-test.log" \
  | grep -E '^(=== RUN|--- |PASS|FAIL|ok|panic)|robustness seed=' || true
if ! grep -q '^ok' "$ROBUSTNESS_OUT/go-test.log"; then
  status=1
fi
verdict=PASS
[ "$status" = 0 ] || verdict=FAIL
echo "robustness: $verdict (seeds $seeds, $dur each, $(( $(date +%s) - start )) s; output in $ROBUSTNESS_OUT)"
exit "$status"
