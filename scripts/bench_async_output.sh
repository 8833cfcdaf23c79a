#!/usr/bin/env bash
# Asynchronous output transfer (issue 16): JOBS jobs on SLOTS slots, each
# running JOB_SECS seconds and writing SIZE_MB MiB of output, with the
# output sent synchronously (the slot waits for it) and asynchronously
# (SKUA_ASYNC_OUTPUT_TRANSFER: the claim starts its next job while the
# output moves), in the same run, one fresh personal pool each; the total
# time from submission to an empty queue, median of RUNS. Then the transfer
# path's speed: one job's output of BIG_MB MiB from the job's end to the
# file in place on the submit side, against `cp` of a file of the same size
# from the execute directory to the submit directory (the same disk),
# median of RUNS.
#
# Usage: scripts/bench_async_output.sh [BIN_DIR]
#        (default: target/release when built, else target/debug)
# Environment: JOBS (200), SLOTS (16), SIZE_MB (100), JOB_SECS (2),
# BIG_MB (1024), RUNS (3). Scaled down: JOBS=40 SIZE_MB=50 RUNS=1 ...
set -eu
cd "$(dirname "$0")/.."
ROOT=$PWD
if [ -n "${1:-}" ]; then
    BIN=$(cd "$1" && pwd)
elif [ -x target/release/skua ] && [ -x target/release/skuad ]; then
    BIN=$ROOT/target/release
else
    BIN=$ROOT/target/debug
fi
JOBS=${JOBS:-200}
SLOTS=${SLOTS:-16}
SIZE_MB=${SIZE_MB:-100}
JOB_SECS=${JOB_SECS:-2}
BIG_MB=${BIG_MB:-1024}
RUNS=${RUNS:-3}
SKUA="$BIN/skua"
SKUAD="$BIN/skuad"
[ -x "$SKUA" ] && [ -x "$SKUAD" ] || { echo "build first: cargo build --release -p skua --bins" >&2; exit 2; }

DIR=$(mktemp -d "${TMPDIR:-/tmp}/skua-bench-async.XXXXXX")
chmod 755 "$DIR"
POOL=""
cleanup() {
    if [ -n "$POOL" ]; then
        SKUA_CONFIG="$POOL/skua_config" "$SKUA" pool stop --dir "$POOL" >/dev/null 2>&1 || true
    fi
    rm -rf "$DIR"
}
trap cleanup EXIT INT TERM

now() { date +%s.%N; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# root may not submit: the jobs are submitted (and run) as nobody
if [ "$(id -u)" = 0 ]; then
    as_user() { setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups -- "$@"; }
    USER_NAME=nobody
else
    as_user() { "$@"; }
    USER_NAME=$(id -un)
fi

# start_pool NAME ASYNC: a fresh pool of SLOTS slots
start_pool() {
    POOL="$DIR/pool-$1"
    export SKUA_CONFIG="$POOL/skua_config"
    _CONDOR_NUM_CPUS=$SLOTS _CONDOR_NEGOTIATOR_CYCLE_DELAY=0 _CONDOR_NEGOTIATOR_INTERVAL=1 \
        _CONDOR_UPDATE_INTERVAL=1 _CONDOR_ALIVE_INTERVAL=1 _CONDOR_STARTER_UPDATE_INTERVAL=5 \
        _CONDOR_SKUA_ASYNC_OUTPUT_TRANSFER="$2" \
        "$SKUA" pool start --dir "$POOL" >/dev/null
    local i=0
    until [ "$("$SKUA" status -af Name 2>/dev/null | wc -l)" -ge "$SLOTS" ] && [ -e "$POOL/spool/.schedd_address" ]; do
        i=$((i + 1)); [ $i -lt 600 ] || { echo "the pool did not come up" >&2; exit 1; }
        sleep 0.1
    done
}
stop_pool() {
    "$SKUA" pool stop --dir "$POOL" >/dev/null 2>&1 || true
    POOL=""
}

# wait_done CLUSTER: until the cluster has left the queue (fails on a hold)
wait_done() {
    local waited=0 status
    while status=$("$SKUA" q ${1:+"$1"} -af JobStatus | sort -u | tr '\n' ' ') && [ -n "$status" ]; do
        case " $status" in *" 5 "*)
            echo "a job is held:" >&2; "$SKUA" q ${1:+"$1"} -af HoldReason | head -3 >&2; exit 1;;
        esac
        [ "$waited" -lt 36000 ] || { echo "the jobs are stuck" >&2; exit 1; }
        sleep 0.1
        waited=$((waited + 1))
    done
}

# many ASYNC: seconds for JOBS jobs of SIZE_MB each
many() {
    local work="$DIR/work-many"
    rm -rf "$work"; mkdir -p "$work"; chmod 777 "$work"
    cat > "$work/job.sh" <<EOF
#!/bin/sh
sleep $JOB_SECS
dd if=/dev/zero of=out.\$1 bs=1048576 count=$SIZE_MB 2>/dev/null
EOF
    chmod 755 "$work/job.sh"
    cat > "$work/job.sub" <<EOF
executable = job.sh
arguments = \$(Process)
should_transfer_files = YES
request_disk = $(( (SIZE_MB + 10) * 1024 ))
queue $JOBS
EOF
    chown -R "$USER_NAME" "$work" 2>/dev/null || true
    local t0 t1 cluster
    t0=$(now)
    cluster=$(cd "$work" && as_user "$SKUA" submit job.sub | sed -n 's/.*cluster \([0-9]*\)\./\1/p')
    [ -n "$cluster" ] || { echo "submit failed" >&2; exit 1; }
    wait_done "$cluster"
    t1=$(now)
    local n
    n=$(find "$work" -name 'out.*' -size "${SIZE_MB}M" | wc -l)
    [ "$n" = "$JOBS" ] || { echo "only $n of $JOBS outputs arrived whole" >&2; exit 1; }
    rm -rf "$work"
    echo "$t0 $t1" | awk '{ print $2 - $1 }'
}

# transfer: seconds from the job's end to its BIG_MB output in place
transfer() {
    local work="$DIR/work-big"
    rm -rf "$work"; mkdir -p "$work"; chmod 777 "$work"
    cat > "$work/job.sh" <<EOF
#!/bin/sh
dd if=/dev/zero of=big.tmp bs=1048576 count=$BIG_MB 2>/dev/null
sync big.tmp
mv big.tmp big.out
date +%s.%N > "$work/ended"
EOF
    chmod 755 "$work/job.sh"
    cat > "$work/job.sub" <<EOF
executable = job.sh
should_transfer_files = YES
transfer_output_files = big.out
request_disk = $(( (BIG_MB + 10) * 1024 ))
queue
EOF
    chown -R "$USER_NAME" "$work" 2>/dev/null || true
    (cd "$work" && as_user "$SKUA" submit job.sub >/dev/null)
    local i=0
    until [ -e "$work/big.out" ]; do
        i=$((i + 1)); [ $i -lt 200000 ] || { echo "no output" >&2; exit 1; }
        sleep 0.01
    done
    local t1 t0
    t1=$(now)
    t0=$(cat "$work/ended")
    wait_done ""
    rm -rf "$work"
    echo "$t0 $t1" | awk '{ print $2 - $1 }'
}

echo "Skua on $(nproc) CPUs; binaries from $BIN; $JOBS jobs x $SIZE_MB MiB on $SLOTS slots, ${JOB_SECS}s each; $RUNS runs"
declare -A total
for mode in false true; do
    start_pool "async-$mode" "$mode"
    times=""
    for _ in $(seq "$RUNS"); do times="$times $(many)"; done
    total[$mode]=$(echo "$times" | tr ' ' '\n' | grep . | median)
    if [ "$mode" = false ]; then
        xfers=""
        for _ in $(seq "$RUNS"); do xfers="$xfers $(transfer)"; done
        xfer=$(echo "$xfers" | tr ' ' '\n' | grep . | median)
        # cp of the same size from the execute directory to a submit directory
        src="$POOL/execute/bench-cp-src"
        dd if=/dev/zero of="$src" bs=1048576 count="$BIG_MB" 2>/dev/null
        sync
        cps=""
        for _ in $(seq "$RUNS"); do
            mkdir -p "$DIR/cp-dst"
            t0=$(now); cp "$src" "$DIR/cp-dst/big.out"; t1=$(now)
            cps="$cps $(echo "$t0 $t1" | awk '{ print $2 - $1 }')"
            rm -rf "$DIR/cp-dst"
        done
        rm -f "$src"
        cp_med=$(echo "$cps" | tr ' ' '\n' | grep . | median)
    fi
    stop_pool
done
printf '%-28s %10s\n' "mode" "total (s)"
printf '%-28s %10.1f\n' "synchronous output" "${total[false]}"
printf '%-28s %10.1f\n' "asynchronous output" "${total[true]}"
awk -v s="${total[false]}" -v a="${total[true]}" 'BEGIN { printf "async saves %.0f%% of the synchronous time\n", (s - a) * 100 / s }'
awk -v x="$xfer" -v c="$cp_med" -v mb="$BIG_MB" 'BEGIN {
    printf "transfer path: %d MiB in %.2f s (%.0f MiB/s); cp: %.2f s (%.0f MiB/s); ratio %.2fx\n",
        mb, x, mb / x, c, mb / c, x / c }'
