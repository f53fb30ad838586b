#!/bin/sh
# Writes what the release archives and packages carry besides the binary:
# shell completions (completions/) and the man page (manpages/), from the
# command line itself. goreleaser runs it before building.
set -eu
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/vramtop" .
rm -rf completions manpages
mkdir -p completions manpages
for sh in bash zsh fish; do
  "$tmp/vramtop" completion "$sh" > "completions/vramtop.$sh"
done
"$tmp/vramtop" man | gzip -9 -n > manpages/vramtop.1.gz
