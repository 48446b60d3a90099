#!/usr/bin/env bash
# Lints the deployment files (deploy/): the systemd unit (systemd-analyze
# verify), the Prometheus rules and scrape config (promtool), the YAML and
# JSON files (they parse), and the metric names the dashboard and the alerts
# use (each is in deploy/metrics.txt). A check whose tool is missing is
# skipped with a printed reason; any other problem fails the script.
# The Dockerfile and compose.yaml are not run (no Docker engine in CI).
#
# Optional: WARDEN_BIN, the warden binary (for the unit's ExecStart; default
# target/debug/warden, else /bin/true stands in).
set -euo pipefail

cd "$(dirname "$0")"
started=$SECONDS
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

skip() { echo "   skipped: $*"; }

echo "-- metric names (deploy/metrics.txt)"
python3 check_metric_names.py metrics.txt grafana/warden.json prometheus/alerts.yml
# The check itself: a name not in the list must fail it.
printf 'expr: rate(warden_no_such_metric_total[5m])\n' > "$tmp/bogus.yml"
if python3 check_metric_names.py metrics.txt "$tmp/bogus.yml" 2>/dev/null; then
  echo "check_metric_names.py accepted an unknown name" >&2
  exit 1
fi

echo "-- YAML and JSON parse"
python3 -c 'import json, sys; [json.load(open(f)) for f in sys.argv[1:]]' grafana/warden.json
if python3 -c 'import yaml' 2>/dev/null; then
  python3 - compose.yaml prometheus/alerts.yml prometheus/prometheus.yml <<'PY'
import sys, yaml
for path in sys.argv[1:]:
    doc = yaml.safe_load(open(path))
    if not isinstance(doc, dict):
        sys.exit(f"{path}: not a YAML mapping")
compose = yaml.safe_load(open("compose.yaml"))
nodes = sorted(s for s in compose["services"] if s.startswith("warden-"))
if nodes != ["warden-1", "warden-2", "warden-3"]:
    sys.exit(f"compose.yaml: expected services warden-1..3, found {nodes}")
peers = None
for name in nodes:
    service = compose["services"][name]
    command = service["command"]
    node_id = name.split("-")[1]
    if command[command.index("--id") + 1] != node_id:
        sys.exit(f"compose.yaml: {name} does not run --id {node_id}")
    this_peers = command[command.index("--peers") + 1]
    if peers not in (None, this_peers):
        sys.exit(f"compose.yaml: {name} has other --peers ({this_peers}) than the others ({peers})")
    peers = this_peers
    if "--insecure" in command or "--certs-dir" not in command:
        sys.exit(f"compose.yaml: {name} must serve TLS (--certs-dir, no --insecure)")
print(f"   compose.yaml: services {', '.join(sorted(compose['services']))}")
PY
else
  skip "python3 has no yaml module (PyYAML; Debian: python3-yaml)"
fi

echo "-- Dockerfile (no Docker engine here: what it must say, read from the text)"
python3 - container/Dockerfile <<'PY'
import re, sys
text = open(sys.argv[1]).read()
lines = [l.strip() for l in text.splitlines() if l.strip() and not l.lstrip().startswith("#")]
problems = []
if len([l for l in lines if l.upper().startswith("FROM ")]) < 2:
    problems.append("not multi-stage (two FROM lines)")
if "cargo build --release --locked -p warden" not in text:
    problems.append("does not build with `cargo build --release --locked -p warden`")
users = [l.split()[1] for l in lines if l.upper().startswith("USER ")]
if not users or users[-1] in ("root", "0"):
    problems.append("does not run as a non-root USER")
if not any(l.upper().startswith("HEALTHCHECK ") and "/readyz" in l for l in re.sub(r"\\\n", " ", text).splitlines()):
    problems.append("no HEALTHCHECK on /readyz")
if problems:
    sys.exit(f"{sys.argv[1]}: " + "; ".join(problems))
print("   ok (multi-stage, --locked release build, non-root user, HEALTHCHECK /readyz)")
PY

echo "-- systemd unit (systemd-analyze verify)"
if command -v systemd-analyze >/dev/null 2>&1; then
  bin=${WARDEN_BIN:-../target/debug/warden}
  [ -x "$bin" ] || bin=/bin/true
  bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
  # The unit as installed, with ExecStart pointing at a binary that exists
  # here (verify refuses a missing one).
  sed "s#/usr/bin/warden#$bin#" systemd/warden.service > "$tmp/warden.service"
  if out=$(cd "$tmp" && systemd-analyze verify ./warden.service 2>&1); then
    # verify exits 0 on unknown keys and bad values, only warning: any line fails.
    if [ -n "$out" ]; then
      echo "$out" >&2
      echo "systemd-analyze verify warned about deploy/systemd/warden.service" >&2
      exit 1
    fi
    echo "   ok"
  else
    if echo "$out" | grep -q "warden.service"; then
      echo "$out" >&2
      exit 1
    fi
    skip "systemd-analyze cannot run here: $(echo "$out" | head -1)"
  fi
else
  skip "systemd-analyze is not installed (Debian: systemd)"
fi

echo "-- Prometheus rules and scrape config (promtool)"
if command -v promtool >/dev/null 2>&1; then
  promtool check rules prometheus/alerts.yml
  promtool check config --syntax-only prometheus/prometheus.yml
else
  skip "promtool is not installed (Debian: prometheus)"
fi

echo "deploy/check.sh: ok in $((SECONDS - started)) s"
