#!/usr/bin/env bash
# Times `skua submit -dry-run` on generated submit files of N `+Attr` lines
# (default 50000 and 200000), to check that reading a submit file stays
# linear in its length. Prints one line per size: lines and seconds.
#
#   scripts/bench_submit_attrs.sh [SKUA_BINARY] [N ...]
#
# SKUA_BINARY defaults to target/release/skua (build it with
# `cargo build --release -p skua --bin skua`).
set -euo pipefail
skua=${1:-target/release/skua}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(50000 200000)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in "${sizes[@]}"; do
    f="$tmp/attrs$n.sub"
    {
        echo "executable = /bin/true"
        awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "+Attr%d = %d\n", i, i }'
        echo "queue"
    } > "$f"
    start=$(date +%s.%N)
    "$skua" submit -dry-run "$f" > /dev/null
    end=$(date +%s.%N)
    printf '%7d +Attr lines: %6.2f s\n' "$n" "$(echo "$end - $start" | bc)"
done
