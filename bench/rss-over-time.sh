#!/usr/bin/env bash
# Two builds of vramtop side by side on the demo, each in its own 200x60 tmux
# session, their VmRSS read once a minute:
#
#   bash bench/rss-over-time.sh BINARY_A BINARY_B [SECONDS]   (default 600)
#
# Prints one table (KiB). Used for variant builds, such as one without a
# start-up step, against the build it came from.
set -u
a=$(realpath "$1"); b=$(realpath "$2"); dur=${3:-600}
tag=rss$$
tmux new-session -d -s ${tag}a -x 200 -y 60 "$a --demo"
tmux new-session -d -s ${tag}b -x 200 -y 60 "$b --demo"
trap 'tmux kill-session -t ${tag}a 2>/dev/null; tmux kill-session -t ${tag}b 2>/dev/null' EXIT
sleep 3
pa=$(tmux list-panes -t ${tag}a -F '#{pane_pid}'); pb=$(tmux list-panes -t ${tag}b -F '#{pane_pid}')
rss() { awk '/^VmRSS/{print $2}' "/proc/$1/status"; }
printf '%6s %12s %12s\n' t_s A_rss_kib B_rss_kib
t=0
while [ "$t" -le "$dur" ]; do
  printf '%6d %12s %12s\n' "$t" "$(rss "$pa")" "$(rss "$pb")"
  [ "$t" -ge "$dur" ] && break
  sleep 60; t=$((t + 60))
done
