#!/usr/bin/env bash
# Warden beside etcd, ZooKeeper and Redis, measured in one run on this machine. Warden runs
# twice: in its default, mutual TLS 1.3 (backend `warden`: certificates minted per cluster by
# `warden cert`), and with --insecure (backend `warden-insecure`), so the report gives the
# cost of TLS beside the anchors.
#
#   bench/run.sh            # full run (over 10 minutes), writes bench/results/latest.{json,md,png}
#   bench/run.sh --quick    # smoke run, under 3 minutes
#
# Extra arguments go to `loadgen run` (e.g. --backends warden,warden-insecure,etcd
# --workloads uncontended,parallel).
# BENCH_LOAD_NOTE="..." is recorded as machine.load_note in the results.
#
#   bench/run.sh --scale          # the scale run (about 25 minutes at its default sizes with
#                                 # --anchors etcd on 2 cores, about 4 more with ZooKeeper's row,
#                                 # whose ramp stops at this process's open-file limit; each
#                                 # anchor's row runs in a child process, killed with its servers
#                                 # past its ramp limit + hold + 5 minutes), writes
#                                 # bench/results/scale.*
#   bench/run.sh --scale --quick  # every scenario small (2,000 sessions, 20,000 locks, 20 s hold),
#                                 # under ~5 minutes: validates the driver (also: --scale-quick)
#
# The scale run is `loadgen scale` (bench/src/scale/): Warden with 100,000 sessions beside etcd and
# ZooKeeper (chubby_cell), filled to 1,000,000 held locks (million_locks: memory, snapshot,
# follower catch-up, full restart, failover), 100,000 sessions expiring at once with a waiter on
# each lock (mass_expiry), the same measurements at 10k/100k/1M locks (curve), and peer traffic
# through a delaying proxy at 25/50/100 ms one way (wan). It runs as one load principal, `scale`,
# whose quota and the cluster limits it raises (scale.md records them). Knobs after --scale go to
# `loadgen scale`: --sessions N, --locks N, --hold-secs S, --scenarios a,b, --anchors etcd,zookeeper
# (or none), --wan-ms 25,50,100. BENCH_NODE_LOG sets the nodes' RUST_LOG; BENCH_KEEP_LOGS=DIR copies their
# logs to DIR when each cluster stops.
# BENCH_OUT=results/NAME.json writes NAME.{json,md,png} instead of scale.*. Without --scale this
# script runs exactly as described above. docs/performance.md, "The scale run", says what each
# scenario measures and how.
# BENCH_OUT=results/NAME.json writes NAME.{json,md,png} instead of latest.*.
#
# After loadgen (the Rust drivers), the same run measures etcd through its own Go client's lock
# (clientv3/concurrency) beside Warden's Go client: bench/go's `gobench`, on fresh clusters,
# writing bench/results/latest-go.json (BENCH_GO_OUT=path picks another file) and printing a
# markdown table; of loadgen's arguments only --quick goes to it. BENCH_SKIP_GO=1 leaves it out.
# The same gobench run measures Warden through its Node client (clients/node) on each warden-go
# cluster, right after (or, in even rounds, right before) the Go client, before the cluster stops:
# bench/node's driver (nodebench.mjs, run by gobench --node-driver; uncontended and 64-client
# parallel, the Go driver's definitions and sizes), rows of backend warden-node in the same
# latest-go.json, and latest-go.md sets them beside warden-go's with the ratios Node ÷ Go (goals:
# 64-client rate at least 0.7x, uncontended p50 at most 1.5x). It needs Node.js 20 or newer with
# npm (clients/node is built with `npm ci && npm run build`, bench/node installed with `npm ci`,
# both from their lockfiles). BENCH_SKIP_NODE=1 leaves the Node rows out (BENCH_SKIP_GO=1 does too).
# Every Warden node gobench starts serves --admin-listen (a free port); its backends
# warden-go-scraped (every node's /metrics read each second) and warden-go-before (the build
# given by --warden-bin-before) measure what metrics cost, and are not part of this script's
# run: run gobench for them (docs/performance.md, "What metrics cost", has the command).
#
# It installs what is missing (Debian packages: etcd-server, etcd-client, zookeeper,
# redis-server, protobuf-compiler and libprotobuf-dev for etcd-client's build, fonts for the chart), builds
# `warden` (release, the main workspace) and `loadgen` (release, bench/'s own workspace),
# starts every cluster on 127.0.0.1 with ports picked free and data under a temp dir on the
# real disk (/var/tmp), and on exit stops only the processes it started (their ids are
# recorded in a pid file as they are spawned).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"

scale=""
if [ "${1:-}" = --scale ] || [ "${1:-}" = --scale-quick ]; then
    [ "$1" = --scale-quick ] && scale_quick=(--quick) || scale_quick=()
    scale=1
    shift
fi

need=()
command -v etcd >/dev/null || need+=(etcd-server)
command -v etcdctl >/dev/null || need+=(etcd-client)
[ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
command -v java >/dev/null || need+=(default-jre-headless)
[ -n "$scale" ] || command -v redis-server >/dev/null || need+=(redis-server)
[ -z "$scale" ] || command -v curl >/dev/null || need+=(curl)
if [ -z "$scale" ] && [ -z "${BENCH_SKIP_GO:-}" ] && ! command -v go >/dev/null; then
    echo "bench/run.sh: the Go driver needs Go 1.26 or newer (or set BENCH_SKIP_GO=1)" >&2
    exit 1
fi
with_node=""
if [ -z "$scale" ] && [ -z "${BENCH_SKIP_GO:-}" ] && [ -z "${BENCH_SKIP_NODE:-}" ]; then
    if ! command -v npm >/dev/null || ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' 2>/dev/null; then
        echo "bench/run.sh: the Node driver needs Node.js 20 or newer with npm (or set BENCH_SKIP_NODE=1)" >&2
        exit 1
    fi
    with_node=1
fi
command -v protoc >/dev/null || need+=(protobuf-compiler)
# etcd-client's protos import google/protobuf/*.proto, which protoc finds in libprotobuf-dev
# (a Recommends of protobuf-compiler, so not pulled in by --no-install-recommends).
[ -f /usr/include/google/protobuf/descriptor.proto ] || need+=(libprotobuf-dev)
pkg-config --exists fontconfig 2>/dev/null || need+=(libfontconfig1-dev pkg-config)
[ -d /usr/share/fonts/truetype/dejavu ] || need+=(fonts-dejavu-core)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

pidfile="$(mktemp /tmp/warden-bench-pids.XXXXXX)"
range_file=/proc/sys/net/ipv4/ip_local_port_range
old_range=""
cleanup() {
    # Only the processes loadgen recorded as it spawned them.
    while read -r pid; do
        [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
    done <"$pidfile"
    rm -f "$pidfile"
    # The ephemeral port range, if the scale run widened it.
    [ -z "$old_range" ] || echo "$old_range" >"$range_file" || true
}
trap cleanup EXIT INT TERM

echo "building warden (release) and loadgen (release)"
(cd "$root" && CARGO_INCREMENTAL=0 cargo build --release --locked -p warden --bin warden)
(cd "$here" && CARGO_INCREMENTAL=0 cargo build --release --locked)

# 10,000 ZooKeeper sessions are 10,000 sockets in this process.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

cd "$here"
if [ -n "$scale" ]; then
    # 100,000 ZooKeeper sessions are 100,000 sockets here and as many in the servers.
    ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
    # ...and 100,000 connections from 127.0.0.1 to three ports on 127.0.0.1: more than
    # three times the default ephemeral range (32768-60999). As root, widen it for the
    # run and put it back after; otherwise the ZooKeeper row stops where ports run out.
    if [ "$(id -u)" = 0 ] && [ -w "$range_file" ]; then
        old_range="$(tr -s '[:space:]' ' ' <"$range_file")"
        echo "1024 65535" >"$range_file"
    else
        echo "not root: the ephemeral port range stays $(cat "$range_file" 2>/dev/null)" >&2
    fi
    BENCH_PIDFILE="$pidfile" WARDEN_COMMIT="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || true)" \
        ./target/release/loadgen scale \
        --warden-bin "$root/target/release/warden" \
        --out "${BENCH_OUT:-results/scale.json}" \
        --load-note "${BENCH_LOAD_NOTE:-}" \
        ${scale_quick[@]+"${scale_quick[@]}"} "$@"
    exit 0  # cleanup puts the port range back
fi
BENCH_PIDFILE="$pidfile" WARDEN_COMMIT="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || true)" \
    ./target/release/loadgen run \
    --warden-bin "$root/target/release/warden" \
    --out "${BENCH_OUT:-results/latest.json}" \
    --load-note "${BENCH_LOAD_NOTE:-}" \
    "$@"

if [ -z "${BENCH_SKIP_GO:-}" ]; then
    go_args=()
    for a in "$@"; do
        if [ "$a" = --quick ]; then go_args+=(--quick); fi
    done
    go_out="${BENCH_GO_OUT:-$here/results/latest-go.json}"
    echo "building and running the Go driver (bench/go: etcd-go-concurrency, warden-go, warden-go-insecure)"
    gobin="$(mktemp -d /tmp/warden-gobench.XXXXXX)"
    (cd "$here/go" && go build -o "$gobin/gobench" ./cmd/gobench)
    if [ -n "$with_node" ]; then
        echo "building the Node client and the Node driver (clients/node, bench/node: warden-node)"
        (cd "$root/clients/node" && npm ci --no-audit --no-fund && npm run --silent build)
        (cd "$here/node" && npm ci --no-audit --no-fund)
        go_args+=(--node-driver "$here/node/nodebench.mjs")
    fi
    BENCH_PIDFILE="$pidfile" WARDEN_COMMIT="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || true)" \
        "$gobin/gobench" ${go_args[@]+"${go_args[@]}"} \
        --warden-bin "$root/target/release/warden" \
        --out "$go_out" \
        --load-note "${BENCH_LOAD_NOTE:-}" | tee "${go_out%.json}.md"
    rm -rf "$gobin"
fi
