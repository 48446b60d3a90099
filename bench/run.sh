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
# BENCH_OUT=results/NAME.json writes NAME.{json,md,png} instead of latest.*.
#
# It installs what is missing (Debian packages: etcd-server, etcd-client, zookeeper,
# redis-server, protobuf-compiler for etcd-client's build, fonts for the chart), builds
# `warden` (release, the main workspace) and `loadgen` (release, bench/'s own workspace),
# starts every cluster on 127.0.0.1 with ports picked free and data under a temp dir on the
# real disk (/var/tmp), and on exit stops only the processes it started (their ids are
# recorded in a pid file as they are spawned).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"

need=()
command -v etcd >/dev/null || need+=(etcd-server)
command -v etcdctl >/dev/null || need+=(etcd-client)
[ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
command -v java >/dev/null || need+=(default-jre-headless)
command -v redis-server >/dev/null || need+=(redis-server)
command -v protoc >/dev/null || need+=(protobuf-compiler)
pkg-config --exists fontconfig 2>/dev/null || need+=(libfontconfig1-dev pkg-config)
[ -d /usr/share/fonts/truetype/dejavu ] || need+=(fonts-dejavu-core)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

pidfile="$(mktemp /tmp/warden-bench-pids.XXXXXX)"
cleanup() {
    # Only the processes loadgen recorded as it spawned them.
    while read -r pid; do
        [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
    done <"$pidfile"
    rm -f "$pidfile"
}
trap cleanup EXIT INT TERM

echo "building warden (release) and loadgen (release)"
(cd "$root" && CARGO_INCREMENTAL=0 cargo build --release --locked -p warden --bin warden)
(cd "$here" && CARGO_INCREMENTAL=0 cargo build --release --locked)

# 10,000 ZooKeeper sessions are 10,000 sockets in this process.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

cd "$here"
BENCH_PIDFILE="$pidfile" WARDEN_COMMIT="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || true)" \
    ./target/release/loadgen run \
    --warden-bin "$root/target/release/warden" \
    --out "${BENCH_OUT:-results/latest.json}" \
    --load-note "${BENCH_LOAD_NOTE:-}" \
    "$@"
