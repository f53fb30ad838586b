#!/usr/bin/env bash
# `vramtop explain` over a 100 MB log of each shape (advisor/explain_shapes_test.go:
# a training log, torchrun, torchtitan, DeepSpeed, Lightning, the Hugging Face
# Trainer, a vLLM server, a progress bar on one line; one 1 MiB line of BFC
# messages), from a file and from standard input through a pipe. Prints the
# median wall time and peak RSS of RUNS runs (GNU time: %e, %M) and whether the
# message at the end was found (exit 0).
#
#   bench/explain.sh ./vramtop [./vramtop-before]
#
# With a second binary, the two run in turn (new, before, new, before ...) on
# the same logs, and the last column is the ratio of their median wall times.
# RUNS (default 3) runs each; DIR (default $TMPDIR/vramtop-explain-logs) holds
# the generated logs (about 800 MB), made on the first call with `go test`.
set -euo pipefail

new=${1:?usage: bench/explain.sh ./vramtop [./vramtop-before]}
old=${2:-}
runs=${RUNS:-3}
dir=${DIR:-${TMPDIR:-/tmp}/vramtop-explain-logs}
timecmd=/usr/bin/time
[ -x "$timecmd" ] || { echo "bench/explain.sh: needs GNU time at $timecmd" >&2; exit 2; }

mkdir -p "$dir"
if [ ! -e "$dir/.complete" ]; then
	echo "writing the logs to $dir ..." >&2
	CGO_CFLAGS=-Wno-deprecated-declarations VRAMTOP_EXPLAIN_BENCH_LOGS="$dir" \
		go test -count=1 -run '^TestExplainWriteBenchLogs$' ./advisor/ >&2
	touch "$dir/.complete"
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT

# one BIN LOG MODE prints "wall_s rss_kib exit".
one() {
	local bin=$1 log=$2 mode=$3 rc=0
	if [ "$mode" = file ]; then
		"$timecmd" -f '%e %M' -o "$out" "$bin" explain "$log" >/dev/null 2>&1 || rc=$?
	else
		"$timecmd" -f '%e %M' -o "$out" sh -c 'cat "$1" | "$0" explain' "$bin" "$log" >/dev/null 2>&1 || rc=$?
	fi
	echo "$(tail -n 1 "$out") $rc"
}

# median of the numbers on stdin.
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

if [ -n "$old" ]; then
	printf '%-30s %6s %-5s %8s %8s %4s %8s %8s %4s %7s\n' log MB input "wall s" "RSS MiB" exit "before s" "RSS MiB" exit "before/new"
else
	printf '%-30s %6s %-5s %8s %8s %4s\n' log MB input "wall s" "RSS MiB" exit
fi
for log in "$dir"/*.log; do
	name=$(basename "$log" .log)
	mb=$(awk -v b="$(stat -c %s "$log")" 'BEGIN {printf "%.1f", b/1e6}')
	for mode in file stdin; do
		nw=() nr=() ow=() or=()
		ne=0 oe=0
		for _ in $(seq "$runs"); do
			read -r w r e < <(one "$new" "$log" "$mode")
			nw+=("$w") nr+=("$r") ne=$e
			if [ -n "$old" ]; then
				read -r w r e < <(one "$old" "$log" "$mode")
				ow+=("$w") or+=("$r") oe=$e
			fi
		done
		w=$(printf '%s\n' "${nw[@]}" | median)
		r=$(printf '%s\n' "${nr[@]}" | median)
		if [ -n "$old" ]; then
			w2=$(printf '%s\n' "${ow[@]}" | median)
			r2=$(printf '%s\n' "${or[@]}" | median)
			awk -v n="$name" -v mb="$mb" -v m="$mode" -v w="$w" -v r="$r" -v e="$ne" -v w2="$w2" -v r2="$r2" -v e2="$oe" \
				'BEGIN {printf "%-30s %6s %-5s %8.2f %8.1f %4s %8.2f %8.1f %4s %7.1f\n", n, mb, m, w, r/1024, e, w2, r2/1024, e2, w2/(w > 0.01 ? w : 0.01)}'
		else
			awk -v n="$name" -v mb="$mb" -v m="$mode" -v w="$w" -v r="$r" -v e="$ne" \
				'BEGIN {printf "%-30s %6s %-5s %8.2f %8.1f %4s\n", n, mb, m, w, r/1024, e}'
		fi
	done
done
