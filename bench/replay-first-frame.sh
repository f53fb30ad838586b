#!/bin/bash
# Prints how long `vramtop replay FILE` takes from its start to the first
# frame of the live view in a 120x40 tmux pane, RUNS times.
#   bash bench/replay-first-frame.sh ./vramtop FILE [RUNS]
set -eu
bin=$(realpath "$1"); file=$(realpath "$2"); runs=${3:-5}
sock=vramtop-ff-$$
trap 'tmux -L $sock kill-server 2>/dev/null || true' EXIT
tmux -L $sock new-session -d -x 120 -y 40 "sleep 600"
for i in $(seq "$runs"); do
  tmux -L $sock respawn-pane -k -t 0 "sleep 600"
  start=$(date +%s%N)
  tmux -L $sock respawn-pane -k -t 0 "$bin replay $file"
  until tmux -L $sock capture-pane -p -t 0 | grep -q "vramtop replay"; do
    if (( ($(date +%s%N) - start) / 1000000 > 20000 )); then echo "run $i: no frame in 20 s"; exit 1; fi
    sleep 0.005
  done
  echo "run $i: first frame after $(( ($(date +%s%N) - start) / 1000000 )) ms"
done
