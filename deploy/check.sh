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
nodes = [s for s in compose["services"] if s.startswith("warden-")]
if len(nodes) != 3:
    sys.exit(f"compose.yaml: expected three warden-N services, found {nodes}")
print(f"   compose.yaml: services {', '.join(sorted(compose['services']))}")
PY
else
  skip "python3 has no yaml module (PyYAML; Debian: python3-yaml)"
fi

echo "-- systemd unit (systemd-analyze verify)"
if command -v systemd-analyze >/dev/null 2>&1; then
  bin=${WARDEN_BIN:-../target/debug/warden}
  [ -x "$bin" ] || bin=/bin/true
  bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
  # The unit as installed, with ExecStart pointing at a binary that exists
  # here (verify refuses a missing one).
  sed "s#/usr/local/bin/warden#$bin#" systemd/warden.service > "$tmp/warden.service"
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
