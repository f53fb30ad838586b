#!/bin/bash
# Prints the peak RSS of `vramtop replay --once --json --at end` over
# compressed recordings of a header and N minimal snapshot lines (the most
# lines a compressed byte holds), for each N in LINES; with a second binary
# (an older build), its figures too, in the same run.
#   bash bench/replay-memory.sh ./vramtop [OLD_VRAMTOP] [LINES]
# LINES defaults to "1000000 3000000 10000000".
set -eu
bin=$(realpath "$1"); old=${2:+$(realpath "$2")}; lines=${3:-1000000 3000000 10000000}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cd "$(dirname "$0")/.."
VRAMTOP_REPLAY_MINIMAL_DIR=$dir VRAMTOP_REPLAY_MINIMAL_LINES=$(echo $lines | tr ' ' ,) \
  go test -count=1 -run '^TestWriteMinimalRecordings$' ./replay >/dev/null
rss() { # binary file -> "max RSS kB, wall s"
  /usr/bin/time -f '%M %e' -o "$dir/time" "$1" replay --once --json --at end "$2" >/dev/null 2>"$dir/err" || true
  read -r kb s <"$dir/time"
  printf '%s MiB | %s s' $((kb / 1024)) "$s"
}
printf '| lines | .gz size | max RSS | wall |%s\n' "${old:+ old: max RSS | old: wall |}"
printf '|---|---|---|---|%s\n' "${old:+---|---|}"
for n in $lines; do
  f=$dir/minimal-$n.jsonl.gz
  printf '| %s | %s kB | %s |' "$n" $(( $(stat -c %s "$f") / 1024 )) "$(rss "$bin" "$f")"
  [ -n "$old" ] && printf ' %s |' "$(rss "$old" "$f")"
  echo
done
