#!/usr/bin/env bash
# Builds the Debian package from the warden binary CI already built (no
# second build: `cargo deb --no-build` with the dev profile the tests use)
# and checks it without installing it on this machine:
#
#   - `dpkg-deb -c` lists the files the package must hold;
#   - the control file names the package, its dependencies and the conffile;
#   - the maintainer scripts parse (`sh -n`) and the postinst makes the user;
#   - `dpkg -x` into a temp dir gives a `warden --version` that runs;
#   - `systemd-analyze verify` passes on the packaged unit (a warning fails).
#
# cargo-deb is installed with `cargo install --locked` (pinned below) where
# missing. A check whose tool is missing (dpkg-deb, systemd-analyze) is
# skipped with a printed reason; any other problem fails the script.
# Usage: deploy/debian/check.sh [OUT_DIR]   (default target/debian)
set -euo pipefail

CARGO_DEB_VERSION=3.8.0

cd "$(dirname "$0")/../.."
root=$PWD
out=${1:-$root/target/debian}
started=$SECONDS
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! command -v dpkg-deb >/dev/null 2>&1; then
  echo "   skipped: dpkg-deb is not installed (not a Debian machine)"
  exit 0
fi
bin=$root/target/debug/warden
[ -x "$bin" ] || { echo "no $bin: run the build first" >&2; exit 1; }

if ! cargo deb --version 2>/dev/null | grep -q "$CARGO_DEB_VERSION"; then
  echo "-- installing cargo-deb $CARGO_DEB_VERSION"
  t=$SECONDS
  cargo install --quiet --locked cargo-deb --version "$CARGO_DEB_VERSION"
  echo "   installed in $((SECONDS - t)) s"
fi

echo "-- cargo deb (the dev binary, stripped)"
rm -rf "$out"
# cargo-deb warns that a dev profile is unusual: CI packages the binary it
# tested rather than build a second profile.
cargo deb -p warden --no-build --locked --profile dev --fast -o "$out/" 2> "$tmp/cargo-deb.err" \
  || { cat "$tmp/cargo-deb.err" >&2; exit 1; }
deb=$(ls "$out"/warden_*.deb)
echo "   $(basename "$deb"): $(du -h "$deb" | cut -f1)"

echo "-- files (dpkg-deb -c)"
dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's#^\./#/#' > "$tmp/files"
for f in /usr/bin/warden /usr/lib/systemd/system/warden.service /etc/warden/warden.toml \
    /usr/share/doc/warden/copyright /usr/share/doc/warden/README.md; do
  grep -qx "$f" "$tmp/files" || { echo "missing from the package: $f" >&2; cat "$tmp/files" >&2; exit 1; }
done
echo "   ok ($(grep -cv '/$' "$tmp/files") files)"

echo "-- control and maintainer scripts"
dpkg-deb -e "$deb" "$tmp/control"
grep -qx 'Package: warden' "$tmp/control/control"
grep -q '^Depends: .*passwd' "$tmp/control/control"
grep -qx '/etc/warden/warden.toml' "$tmp/control/conffiles"
for script in "$tmp"/control/{preinst,postinst,prerm,postrm}; do
  [ -e "$script" ] || continue
  sh -n "$script" || { echo "$(basename "$script") does not parse" >&2; exit 1; }
done
grep -q 'useradd --system' "$tmp/control/postinst"
# Installed, not enabled or started: no `enable` and no `start` fragment.
if grep -qE 'deb-systemd-invoke (start|restart) |systemctl .*enable ' "$tmp/control/postinst"; then
  echo "the postinst enables or starts the unit" >&2
  exit 1
fi
echo "   ok"

echo "-- dpkg -x, then warden --version"
dpkg -x "$deb" "$tmp/root"
version=$("$tmp/root/usr/bin/warden" --version)
expected="warden $(cargo metadata --no-deps --format-version 1 --locked \
  | python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "warden"))')"
[ "$version" = "$expected" ] || { echo "warden --version: $version, expected $expected" >&2; exit 1; }
echo "   $version"

echo "-- the packaged unit (systemd-analyze verify)"
if command -v systemd-analyze >/dev/null 2>&1; then
  # ExecStart at the extracted binary (verify refuses a missing one).
  sed "s#/usr/bin/warden#$tmp/root/usr/bin/warden#" \
    "$tmp/root/usr/lib/systemd/system/warden.service" > "$tmp/warden.service"
  if out=$(cd "$tmp" && systemd-analyze verify ./warden.service 2>&1) && [ -z "$out" ]; then
    echo "   ok"
  elif echo "$out" | grep -q "warden.service"; then
    echo "$out" >&2
    echo "systemd-analyze verify failed or warned on the packaged unit" >&2
    exit 1
  else
    # Not about the unit: verify cannot run here (e.g. no systemd as PID 1).
    echo "   skipped: systemd-analyze cannot verify here: $(echo "$out" | head -1)"
  fi
else
  echo "   skipped: systemd-analyze is not installed"
fi

echo "package check took $((SECONDS - started)) s"
