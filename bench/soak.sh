#!/usr/bin/env bash
# soak.sh: does vramtop's memory stay flat once its history is full?
#
# Runs `vramtop serve --demo` scraped once a second (a curl loop, as
# Prometheus would) and the live view `vramtop --demo` in a detached tmux
# session, both with --history 1m so the history fills within a minute and
# any growth after that is a leak, not history. It reads each process's RSS
# every few seconds and, after the fill time, fits a line to it: the table
# gives the RSS at the start and end of the measured part, its range, and
# the slope in MB per hour (goal: under 1 MB an hour).
#
# Usage: bench/soak.sh [duration]      (default 10m; DURATION= works too)
# Environment: FILL (default 2m: history plus settling, not measured),
# EVERY (seconds between RSS readings, default 5), PORT (default 19400),
# VRAMTOP (a built binary; default: build one from this checkout).
set -euo pipefail

DURATION=${1:-${DURATION:-10m}}
FILL=${FILL:-2m}
EVERY=${EVERY:-5}
PORT=${PORT:-19400}

secs() { # 10m, 90s, 1h, 120 -> seconds
	local d=$1
	case $d in
	*h) echo $((${d%h} * 3600)) ;;
	*m) echo $((${d%m} * 60)) ;;
	*s) echo "${d%s}" ;;
	*[!0-9]*) echo "soak: bad duration $d (want e.g. 10m, 90s, 1h)" >&2; exit 2 ;;
	*) echo "$d" ;;
	esac
}
total=$(secs "$DURATION")
fill=$(secs "$FILL")
if ((total <= fill + 4 * EVERY)); then
	echo "soak: duration $DURATION leaves too little after the fill time $FILL" >&2
	exit 2
fi
for tool in tmux curl awk; do
	command -v "$tool" >/dev/null || { echo "soak: $tool not found" >&2; exit 2; }
done

work=$(mktemp -d)
session="vramtop-soak-$$"
# A server of its own: other tmux users (an end-to-end test's kill-server)
# cannot end the live view under the soak.
tmx() { tmux -L "$session" "$@"; }
serve_pid=""
curl_pid=""
cleanup() {
	[[ -n $curl_pid ]] && kill "$curl_pid" 2>/dev/null || true
	[[ -n $serve_pid ]] && kill "$serve_pid" 2>/dev/null || true
	tmx kill-server 2>/dev/null || true
	[[ -n $serve_pid ]] && wait "$serve_pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bin=${VRAMTOP:-}
if [[ -z $bin ]]; then
	cd "$(dirname "$0")/.."
	export CGO_CFLAGS=${CGO_CFLAGS:--Wno-deprecated-declarations}
	go build -o "$work/vramtop" .
	bin=$work/vramtop
fi

"$bin" serve --demo --history 1m --listen "127.0.0.1:$PORT" >"$work/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 50); do
	curl -fsS "http://127.0.0.1:$PORT/metrics" >/dev/null 2>&1 && break
	sleep 0.2
done
curl -fsS "http://127.0.0.1:$PORT/metrics" >/dev/null || { echo "soak: serve did not answer:" >&2; cat "$work/serve.log" >&2; exit 1; }
(while sleep 1; do curl -fsS -o /dev/null "http://127.0.0.1:$PORT/metrics" || echo "scrape failed at $(date +%T)" >>"$work/scrape.err"; done) &
curl_pid=$!

tmx new-session -d -s "$session" -x 160 -y 48 "exec '$bin' --demo --history 1m"
tmx set-option -t "$session" remain-on-exit on >/dev/null
tui_pid=$(tmx list-panes -t "$session" -F '#{pane_pid}')

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo ""; }

echo "soak: $DURATION (first $FILL not measured), RSS every ${EVERY}s; serve pid $serve_pid, live view pid $tui_pid" >&2
start=$(date +%s)
while :; do
	now=$(date +%s)
	el=$((now - start))
	((el > total)) && break
	s=$(rss_kb "$serve_pid")
	t=$(rss_kb "$tui_pid")
	[[ -z $s ]] && { echo "soak: serve exited:" >&2; cat "$work/serve.log" >&2; exit 1; }
	if [[ -z $t ]]; then
		echo "soak: the live view exited after ${el}s (status $(tmx list-panes -t "$session" -F '#{pane_dead_status}' 2>/dev/null || echo unknown)); its screen:" >&2
		tmx capture-pane -p -t "$session" 2>/dev/null | tail -20 >&2 || true
		exit 1
	fi
	echo "$el $s $t" >>"$work/rss"
	sleep "$EVERY"
done

scrapes_failed=0
[[ -f $work/scrape.err ]] && scrapes_failed=$(wc -l <"$work/scrape.err")
measured=$((total - fill))
echo "vramtop soak: $DURATION, --history 1m, RSS from $FILL on ($((measured / 60)) min $((measured % 60)) s measured, a reading every ${EVERY}s); failed scrapes: $scrapes_failed"
awk -v fill="$fill" '
	$1 >= fill { n++; for (c = 2; c <= 3; c++) { x[n] = $1; y[c, n] = $c / 1024 } }
	END {
		if (n < 3) { print "too few readings after the fill time"; exit 1 }
		printf "| %-26s | %13s | %11s | %15s | %14s |\n", "process", "RSS start MB", "RSS end MB", "min-max MB", "growth MB/h"
		printf "|%s|%s|%s|%s|%s|\n", "----------------------------", "---------------", "-------------", "-----------------", "----------------"
		name[2] = "vramtop serve --demo"; name[3] = "vramtop --demo (live view)"
		for (c = 2; c <= 3; c++) {
			sx = sy = sxx = sxy = 0; lo = hi = y[c, 1]
			for (i = 1; i <= n; i++) {
				sx += x[i]; sy += y[c, i]; sxx += x[i] * x[i]; sxy += x[i] * y[c, i]
				if (y[c, i] < lo) lo = y[c, i]; if (y[c, i] > hi) hi = y[c, i]
			}
			slope = (n * sxy - sx * sy) / (n * sxx - sx * sx) # MB per second
			printf "| %-26s | %13.1f | %11.1f | %6.1f - %6.1f | %14.2f |\n", name[c], y[c, 1], y[c, n], lo, hi, slope * 3600
		}
	}' "$work/rss"
