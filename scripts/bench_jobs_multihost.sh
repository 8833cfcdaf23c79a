#!/usr/bin/env bash
# Throughput across hosts, beside the same workloads on one host, in one run.
#
#   single host: a personal pool with 16 slots (NUM_CPUS=16), as
#                scripts/bench_jobs.sh runs it;
#   multi-host:  four test hosts made with network namespaces
#                (../shared/netns/hosts.sh): a central manager (collector,
#                negotiator), a submit host (schedd) and two execute hosts of
#                8 slots each (NUM_CPUS=8); every connection between hosts is
#                TLS (a test CA made here with openssl, the pool signing key
#                copied to each host), each host has its own pool directory
#                and FILESYSTEM_DOMAIN.
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
# Needs root, iproute2's `ip`, `unshare`, `setpriv` and `openssl`.
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
CA="$DIR/ca"
mkdir -p "$CA"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=bench pool CA" -keyout "$CA/ca.key" -out "$CA/ca.pem" 2>/dev/null
head -c 64 /dev/urandom > "$CA/POOL"
for i in 1 2 3 4; do
    h="$DIR/h$i"
    mkdir -p "$h/log" "$h/spool" "$h/execute" "$h/lock" "$h/passwords.d" "$h/tokens.d" "$h/certs"
    chmod 700 "$h/passwords.d" "$h/tokens.d"
    cp "$CA/POOL" "$h/passwords.d/POOL" && chmod 600 "$h/passwords.d/POOL"
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -subj "/CN=$HOSTS_PREFIX$i" -keyout "$h/certs/host.key" -out "$h/certs/host.csr" 2>/dev/null
    printf 'subjectAltName=IP:%s,DNS:%s\nbasicConstraints=CA:FALSE\n' "$(addr $i)" "$HOSTS_PREFIX$i" > "$h/certs/ext"
    openssl x509 -req -in "$h/certs/host.csr" -CA "$CA/ca.pem" -CAkey "$CA/ca.key" -CAcreateserial \
        -days 2 -extfile "$h/certs/ext" -out "$h/certs/host.pem" 2>/dev/null
    cp "$CA/ca.pem" "$h/certs/ca.pem"
    case $i in
        1) daemons="MASTER, COLLECTOR, NEGOTIATOR" ;;
        2) daemons="MASTER, SCHEDD" ;;
        *) daemons="MASTER, STARTD" ;;
    esac
    {
        echo "LOCAL_DIR = $h"
        echo 'LOG = $(LOCAL_DIR)/log'
        echo 'SPOOL = $(LOCAL_DIR)/spool'
        echo 'EXECUTE = $(LOCAL_DIR)/execute'
        echo 'LOCK = $(LOCAL_DIR)/lock'
        echo "CONDOR_HOST = $(addr 1)"
        echo 'COLLECTOR_HOST = $(CONDOR_HOST):9618'
        echo "NETWORK_INTERFACE = $(addr $i)"
        echo 'SCHEDD_ADDRESS_FILE = $(SPOOL)/.schedd_address'
        echo "DAEMON_LIST = $daemons"
        echo "SKUAD = $SKUAD"
        for d in COLLECTOR NEGOTIATOR SCHEDD STARTD; do
            echo "$d = \$(SKUAD)"
            echo "${d}_ARGS = $(echo $d | tr 'A-Z' 'a-z')"
        done
        echo 'UID_DOMAIN = bench.test'
        echo 'FILESYSTEM_DOMAIN = $(FULL_HOSTNAME)'
        echo 'SEC_PASSWORD_DIRECTORY = $(LOCAL_DIR)/passwords.d'
        echo 'SEC_TOKEN_POOL_SIGNING_KEY_FILE = $(SEC_PASSWORD_DIRECTORY)/POOL'
        echo 'SEC_TOKEN_SYSTEM_DIRECTORY = $(LOCAL_DIR)/tokens.d'
        echo 'SEC_TOKEN_DIRECTORY = $(LOCAL_DIR)/tokens.d'
        echo 'AUTH_SSL_SERVER_CERTFILE = $(LOCAL_DIR)/certs/host.pem'
        echo 'AUTH_SSL_SERVER_KEYFILE = $(LOCAL_DIR)/certs/host.key'
        echo 'AUTH_SSL_CLIENT_CAFILE = $(LOCAL_DIR)/certs/ca.pem'
        echo 'UPDATE_INTERVAL = 5'
        echo 'CLASSAD_LIFETIME = 60'
        echo 'NEGOTIATOR_INTERVAL = 5'
        echo 'NEGOTIATOR_CYCLE_DELAY = 0'
        echo 'NUM_CPUS = 8'
    } > "$h/skua_config"
    hosts run "$i" env -i PATH="$PATH" HOME="$DIR" SKUA_CONFIG="$h/skua_config" "$SKUAD" master \
        > "$h/master.out" 2>&1 &
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
