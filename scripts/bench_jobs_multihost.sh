#!/usr/bin/env bash
# Throughput across hosts, beside the same workloads on one host, in one run.
#
#   single host: a personal pool with 16 slots (NUM_CPUS=16), as
#                scripts/bench_jobs.sh runs it;
#   multi-host:  four test hosts made with network namespaces
#                (../shared/netns/hosts.sh): a central manager (collector,
#                negotiator), a submit host (schedd) and two execute hosts of
#                8 slots each (NUM_CPUS=8), joined as an administrator joins
#                them (`skua pool start --role central-manager`, then
#                `skua pool join` on each host); every connection between
#                hosts is TLS with the pool's CA, each host has its own pool
#                directory and FILESYSTEM_DOMAIN.
#
# Workloads, each one cluster timed from the submit to the moment the last
# job has left the queue: N trivial jobs (/bin/true), then 200 x `sleep 1`
# (ideal: 200 / 16 slots = 12.5 -> 13 s). Prints jobs/s for both pools and
# the multi-host figure as a fraction of the single-host one.
#
# Usage (as root: namespaces): scripts/bench_jobs_multihost.sh [BIN_DIR] [N] [SLEEPS]
#        (defaults: target/release 1000 200)
# Environment: HOSTS_PREFIX (default skb), HOSTS_NET (default 10.79.0) for the
# test hosts; SKUA_SHARED (default ../shared) for the shared directory.
# Needs root, iproute2's `ip`, `unshare` and `setpriv`.
set -eu
cd "$(dirname "$0")/.."
BIN=$(cd "${1:-target/release}" && pwd)
N=${2:-1000}
SLEEPS=${3:-200}
SKUA="$BIN/skua"
SKUAD="$BIN/skuad"
[ -x "$SKUA" ] && [ -x "$SKUAD" ] || { echo "build first: cargo build --release --workspace" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "run as root (network namespaces)" >&2; exit 2; }
HOSTS_SH=$(cd "${SKUA_SHARED:-../shared}" && pwd)/netns/hosts.sh
export HOSTS_PREFIX=${HOSTS_PREFIX:-skb}
export HOSTS_NET=${HOSTS_NET:-10.79.0}
hosts() { bash "$HOSTS_SH" "$@"; }

DIR=$(mktemp -d "${TMPDIR:-/tmp}/skua-bench-mh.XXXXXX")
chmod 755 "$DIR"
cleanup() {
    SKUA_CONFIG="$DIR/single/skua_config" "$SKUA" pool stop --dir "$DIR/single" >/dev/null 2>&1 || true
    hosts down >/dev/null 2>&1 || true
    rm -rf "$DIR"
}
trap cleanup EXIT INT TERM

now() { date +%s.%N; }
as_nobody() { setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups -- "$@"; }

# timed RUN_ON NAME SUBMIT-TEXT COUNT: submits as nobody through RUN_ON (a
# command prefix that runs on the submit host, with SKUA_CONFIG set), waits
# for the queue to drain, prints the rate.
timed() {
    on=$1; name=$2; text=$3; count=$4
    printf '%s' "$text" > "$DIR/work/job.sub"
    t0=$(now)
    cluster=$(cd "$DIR/work" && $on setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups -- \
        "$SKUA" submit job.sub | sed -n 's/.*cluster \([0-9]*\)\./\1/p')
    [ -n "$cluster" ] || { echo "submit failed" >&2; exit 1; }
    while [ -n "$($on "$SKUA" q "$cluster" -af ProcId | head -1)" ]; do
        sleep 0.05
    done
    t1=$(now)
    echo "$count $t0 $t1" | awk -v name="$name" '{ d = $3 - $2; printf "%-40s %6d jobs  %8.2f s  %8.1f jobs/s\n", name, $1, d, $1 / d }'
}

trivial="executable = /bin/true
transfer_executable = false
should_transfer_files = YES
request_disk = 1024
queue $N
"
sleeps="executable = /bin/sleep
transfer_executable = false
arguments = 1
should_transfer_files = YES
request_disk = 1024
queue $SLEEPS
"

mkdir -p "$DIR/work"
chown nobody "$DIR/work"

# ---- single host -------------------------------------------------------------
export SKUA_CONFIG="$DIR/single/skua_config"
_CONDOR_NUM_CPUS=16 _CONDOR_NEGOTIATOR_CYCLE_DELAY=0 _CONDOR_NEGOTIATOR_INTERVAL=5 \
    "$SKUA" pool start --dir "$DIR/single" >/dev/null
i=0
until [ "$("$SKUA" status -af Name 2>/dev/null | wc -l)" -ge 16 ]; do
    i=$((i + 1)); [ $i -lt 200 ] || { echo "the single-host slots did not appear" >&2; exit 1; }
    sleep 0.1
done
echo "Skua on $(nproc) CPUs; binaries from $BIN"
single=$(timed env "single host, $N x /bin/true" "$trivial" "$N")
echo "$single"
single_sleep=$(timed env "single host, $SLEEPS x sleep 1" "$sleeps" "$SLEEPS")
echo "$single_sleep"
"$SKUA" pool stop --dir "$DIR/single" >/dev/null
unset SKUA_CONFIG

# ---- four hosts --------------------------------------------------------------
hosts down >/dev/null 2>&1 || true
hosts up 4
addr() { echo "$HOSTS_NET.$((10 + $1))"; }
# every host's daemons get these knobs through the environment
knobs="_CONDOR_NUM_CPUS=8 _CONDOR_NEGOTIATOR_CYCLE_DELAY=0 _CONDOR_NEGOTIATOR_INTERVAL=5"
on() { local h=$1; shift; hosts run "$h" env -i PATH="$PATH" HOME="$DIR" $knobs "$@"; }
out=$(on 1 "$SKUA" pool start --role central-manager --dir "$DIR/h1" --address "$(addr 1)")
join=$(printf '%s\n' "$out" | grep '^skua pool join ')
[ -n "$join" ] || { printf 'no join command from the central manager:\n%s\n' "$out" >&2; exit 1; }
target=$(echo "$join" | awk '{print $4}')
hash=$(echo "$join" | sed -n 's/.*--ca-hash \([^ ]*\).*/\1/p')
token=$(echo "$join" | sed -n 's/.*--token \([^ ]*\).*/\1/p')
for i in 2 3 4; do
    [ "$i" = 2 ] && role=submit || role=execute
    [ "$i" = 2 ] || token=$(on 1 env SKUA_CONFIG="$DIR/h1/skua_config" "$SKUA" token create --join)
    on "$i" "$SKUA" pool join "$target" --token "$token" --ca-hash "$hash" --role "$role" \
        --dir "$DIR/h$i" >/dev/null
done
on_cm() { hosts run 1 env SKUA_CONFIG="$DIR/h1/skua_config" "$@"; }
on_submit() { hosts run 2 env SKUA_CONFIG="$DIR/h2/skua_config" "$@"; }
i=0
until [ "$(on_cm "$SKUA" status -af Name 2>/dev/null | wc -l)" -ge 16 ] \
    && [ -S "$DIR/h2/lock/schedd.sock" ]; do
    i=$((i + 1)); [ $i -lt 300 ] || { echo "the multi-host slots did not appear" >&2; exit 1; }
    sleep 0.1
done
multi=$(timed on_submit "4 hosts (2 x 8 slots), $N x /bin/true" "$trivial" "$N")
echo "$multi"
multi_sleep=$(timed on_submit "4 hosts (2 x 8 slots), $SLEEPS x sleep 1" "$sleeps" "$SLEEPS")
echo "$multi_sleep"

rate() { awk '{ for (i = 1; i <= NF; i++) if ($i == "jobs/s") print $(i - 1) }'; }
echo
echo "$(echo "$single" | rate) $(echo "$multi" | rate)" |
    awk '{ printf "trivial jobs: multi-host %.1f jobs/s = %.2f of the single-host %.1f jobs/s (target: at least 0.80)\n", $2, $2 / $1, $1 }'
