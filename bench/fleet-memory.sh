#!/bin/bash
# Prints the peak RSS of `vramtop fleet --once` against a Prometheus on
# loopback whose every answer is MIB MiB (five queries at once, each
# refused past its limit), for this build and, given, an older one.
#   bash bench/fleet-memory.sh ./vramtop [OLD_VRAMTOP] [MIB]
set -eu
bin=$(realpath "$1"); old=${2:+$(realpath "$2")}; mib=${3:-400}
dir=$(mktemp -d)
cd "$(dirname "$0")/.."
go test -c -o "$dir/fleet.test" ./fleet
VRAMTOP_FLEET_HUGE_URL_FILE=$dir/url VRAMTOP_FLEET_HUGE_MIB=$mib "$dir/fleet.test" -test.run '^TestServeHugeAnswers$' -test.timeout 10m >/dev/null 2>&1 &
srv=$!
trap 'kill $srv 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do [ -s "$dir/url" ] && break; sleep 0.1; done
url=$(cat "$dir/url")
run() { # binary -> table cells
  /usr/bin/time -f '%M %e' -o "$dir/time" "$1" fleet --once --prometheus "$url" --timeout 60s >/dev/null 2>"$dir/err" && code=0 || code=$?
  read -r kb s < <(tail -1 "$dir/time")
  printf '%s MiB | %s s | %s | %s' $((kb / 1024)) "$s" "$code" "$(grep -m1 -o 'answer[^:]*larger than [0-9]* MiB[^;]*' "$dir/err" || head -c 80 "$dir/err")"
}
echo "| build | max RSS | wall | exit | error |"
echo "|---|---|---|---|---|"
echo "| this | $(run "$bin") |"
[ -n "$old" ] && echo "| old | $(run "$old") |"
exit 0
