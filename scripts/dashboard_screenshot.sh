#!/usr/bin/env bash
# Takes a screenshot of the live view of a run, with headless Chromium.
# Usage: scripts/dashboard_screenshot.sh OUT.png POINTS CORAL train|bench ARGS...
# Starts `CORAL train|bench ARGS... --dashboard`, waits until its learning
# curve has POINTS points (0: until its state answers), screenshots the page
# into OUT.png, then stops the run with SIGINT.
set -euo pipefail
out=$1 points=$2
shift 2
log=$(mktemp)
"$@" --dashboard > "$log" 2>&1 &
run=$!
trap 'kill -INT $run 2>/dev/null || true; wait $run 2>/dev/null || true; rm -f "$log"' EXIT
url=
for _ in $(seq 600); do
  url=$(grep -o 'http://127.0.0.1:[0-9]*/' "$log" | head -1 || true)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { cat "$log"; echo "no dashboard line" >&2; exit 1; }
for _ in $(seq 1200); do
  n=$(curl -s "${url}state.json" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["curve"]))' || echo 0)
  [ "$n" -ge "$points" ] && break
  sleep 0.5
done
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1500,900 \
  --virtual-time-budget=2500 --screenshot="$out" "$url" 2>/dev/null
echo "wrote $out from $url"
