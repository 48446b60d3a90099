#!/usr/bin/env bash
# Where Warden's time goes per acquire+release (docs/performance.md).
#
#   bench/profile.sh [OUT_DIR]     # default /tmp/warden-profile; run bench/run.sh once first (it builds)
#
# For each of the `uncontended` and `parallel` workloads (WORKLOADS="parallel" picks) it runs
# loadgen against a fresh three-node Warden cluster, plaintext by default (BACKEND=warden-insecure:
# the profile is of the server's own work; BACKEND=warden profiles the mutual-TLS default, for the
# cost of TLS) three times (TOOLS="none perf" picks), attaching one tool per pass to the three server
# processes for WINDOW seconds in steady state:
#   1. nothing:  Raft commit index and CPU ticks (/proc) over the window -> entries and CPU per cycle
#   2. perf:     perf record -e cpu-clock (software clock: this VM has no hardware counters)
#   3. strace:   strace -c -f (syscall counts: fdatasync per cycle, writes, sends)
# Cycles in a window = committed Raft entries / 2 (one entry for the acquire, one for the
# release; pass 1 checks the 2).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="${1:-/tmp/warden-profile}"
window="${WINDOW:-8}"
mkdir -p "$out"
command -v perf >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf; }
command -v strace >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq strace; }
warden="$root/target/release/warden"
loadgen="$here/target/release/loadgen"

lg=""
pidfile=""
cleanup() {
    [ -n "$lg" ] && kill "$lg" 2>/dev/null || true
    if [ -n "$pidfile" ] && [ -f "$pidfile" ]; then
        while read -r pid; do kill -9 "$pid" 2>/dev/null || true; done <"$pidfile"
    fi
}
trap cleanup EXIT INT TERM

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
commit_index() {
    local json
    for _ in $(seq 40); do
        if json=$("$warden" cluster status --endpoints "$1" $client_security --output json 2>/dev/null); then
            python3 -c 'import json,sys; print(json.loads(sys.argv[1])["commit_index"])' "$json"
            return
        fi
        sleep 0.5
    done
    echo "no cluster status from $1" >&2
    return 1
}

backend="${BACKEND:-warden-insecure}"
for workload in ${WORKLOADS:-uncontended parallel}; do
    for tool in ${TOOLS:-none perf strace}; do
        tag="$workload-$tool"
        pidfile="$out/$tag.pids"
        : >"$pidfile"
        (cd "$here" && BENCH_PIDFILE="$pidfile" exec "$loadgen" run --backends "$backend" \
            --workloads "$workload" --iterations 4000 --seconds 25 \
            --warden-bin "$warden" --out "$out/$tag.json") >"$out/$tag.log" 2>&1 &
        lg=$!
        until [ "$(wc -l <"$pidfile")" -ge 3 ]; do sleep 0.2; done
        # Cluster formation, the clients' connects and the warm-up.
        sleep 6
        mapfile -t pids <"$pidfile"
        ports=$(for p in "${pids[@]}"; do
            printf '%s\n' "$(tr '\0' ' ' <"/proc/$p/cmdline" | sed 's/.*--listen \([^ ]*\).*/\1/')"
        done | paste -sd,)
        # The CLI's credentials: --insecure for plaintext nodes; for TLS nodes
        # (--certs-dir DIR/nN) root's certificate in DIR, where loadgen minted it.
        node_certs=$(tr '\0' ' ' <"/proc/${pids[0]}/cmdline" | sed -n 's/.*--certs-dir \([^ ]*\).*/\1/p')
        if [ -n "$node_certs" ]; then
            client_security="--certs-dir $(dirname "$node_certs")"
        else
            client_security="--insecure"
        fi
        c0=$(commit_index "$ports")
        t0=(); for p in "${pids[@]}"; do t0+=("$(ticks "$p")"); done
        case $tool in
        none) sleep "$window" ;;
        perf) perf record -q -e cpu-clock -F 999 -p "$(IFS=,; echo "${pids[*]}")" \
                  -o "$out/$tag.data" -- sleep "$window" >/dev/null 2>&1 ;;
        strace)
            sp=()
            for p in "${pids[@]}"; do
                strace -c -f -p "$p" -o "$out/$tag.$p.txt" & sp+=($!)
            done
            sleep "$window"
            kill -INT "${sp[@]}"; wait "${sp[@]}" 2>/dev/null || true ;;
        esac
        c1=$(commit_index "$ports")
        entries=$((c1 - c0))
        echo "== $tag: ${entries} entries committed in ${window} s (~$((entries / 2)) cycles)" | tee "$out/$tag.summary"
        for i in "${!pids[@]}"; do
            p=${pids[$i]}
            d=$(( $(ticks "$p") - ${t0[$i]} ))
            echo "   node pid $p: $((d * 10)) ms CPU in the window" | tee -a "$out/$tag.summary"
        done
        wait "$lg" || true
        lg=""
    done
    # perf: self time by where it is spent.
    [ -f "$out/$workload-perf.data" ] || continue
    perf report -i "$out/$workload-perf.data" --stdio --no-children --sort comm,dso,sym 2>/dev/null \
        >"$out/$workload-perf.txt" || true
    python3 - "$out/$workload-perf.txt" <<'EOF' | tee "$out/$workload-perf-groups.txt"
import re, sys, collections
groups = collections.Counter()
threads = collections.Counter()
pat = re.compile(r'^\s+([\d.]+)%\s+(\S+)\s+(\S+)\s+\[(.)\]\s+(.*)$')
rules = [
    ('kernel: network (tcp/loopback)', lambda d, s: d.startswith('[kernel') and re.search(r'tcp|inet|skb|sock|net_|loopback|__dev|ip_|nf_', s)),
    ('kernel: disk and fs (fdatasync, ext4, jbd2, block)', lambda d, s: d.startswith('[kernel') and re.search(r'ext4|jbd2|blk|bio|fsync|fdatasync|file_write|filemap|iomap|virtio|page_cache|folio', s)),
    ('kernel: scheduler, futex, epoll, timers', lambda d, s: d.startswith('[kernel') and re.search(r'sched|futex|epoll|hrtimer|timer|wake|switch|idle|tick|ttwu|enqueue|dequeue|pick_', s)),
    ('kernel: other (syscall entry, memory, ...)', lambda d, s: d.startswith('[kernel')),
    ('openraft', lambda d, s: 'openraft' in s),
    ('redb (log store)', lambda d, s: 'redb' in s),
    ('gRPC: tonic / h2 / hyper / tower / prost', lambda d, s: re.search(r'\b(tonic|h2|hyper|hyper_util|tower|prost|http|bytes)::', s)),
    ('tokio runtime', lambda d, s: 'tokio::' in s or 'mio::' in s),
    ('warden (core, server, proto)', lambda d, s: 'warden' in s),
    ('serialization (postcard, serde)', lambda d, s: re.search(r'postcard|serde', s)),
    ('allocator and memcpy (libc)', lambda d, s: re.search(r'malloc|free|realloc|memcpy|memmove|memset|_int_|cfree|calloc', s)),
    ('libc: other', lambda d, s: 'libc' in d),
    ('other', lambda d, s: True),
]
total = 0.0
for line in open(sys.argv[1], errors='replace'):
    m = pat.match(line)
    if not m:
        continue
    pct, comm, dso, _, sym = float(m.group(1)), m.group(2), m.group(3), m.group(4), m.group(5)
    total += pct
    threads[comm] += pct
    for name, rule in rules:
        if rule(dso, sym):
            groups[name] += pct
            break
print(f"samples accounted: {total:.1f} %")
for name, pct in groups.most_common():
    print(f"{pct:6.1f} %  {name}")
print("by thread name:")
for name, pct in threads.most_common(6):
    print(f"{pct:6.1f} %  {name}")
EOF
    # strace: per node, the calls that matter per cycle.
    for f in "$out/$workload-strace".*.txt; do
        echo "-- $(basename "$f")"
        grep -E "fdatasync|fsync|pwrite64|writev|sendmsg|sendto|recvfrom|epoll_wait|futex|total" "$f" || true
    done | tee "$out/$workload-strace-calls.txt"
done
echo "profile written to $out"
