#!/usr/bin/env bash
# Render `mpslint audit --format html` for a tree and take a screenshot of it in headless chromium.
# Usage: bench/audit_screenshot.sh [TREE_OR_YAML] [OUT.png] [HEIGHT]
#   default tree: fixtures/aten; default output: /tmp/audit.png
# Needs Debian's chromium (apt-get install -y chromium). No network is used: the page is self-contained.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
target="${1:-$here/fixtures/aten}"
png="${2:-/tmp/audit.png}"
height="${3:-1600}"
mpslint="${MPSLINT:-mpslint}"
command -v chromium >/dev/null || { echo "chromium not installed (apt-get install -y chromium)" >&2; exit 3; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$mpslint" audit "$target" --format html -o "$work/audit.html"
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --user-data-dir="$work/profile" --hide-scrollbars \
  --screenshot="$png" --window-size=1280,"$height" "file://$work/audit.html" >"$work/chromium.log" 2>&1 || {
  cat "$work/chromium.log" >&2; exit 1; }
test -s "$png" || { echo "no screenshot written" >&2; cat "$work/chromium.log" >&2; exit 1; }
echo "$png"
