#!/bin/sh
# Dedicated scheduler benchmark on a personal pool of 16 dedicated slots:
# the time from `skua submit` to every node of a parallel job running
# (each node marks itself started in a shared directory) for 1, 4 and 16
# nodes, on idle dedicated claims (a 16-node warm-up job leaves the
# dedicated scheduler holding every slot; UNUSED_CLAIM_TIMEOUT keeps them).
# Each size runs RUNS times; the median is printed. The baseline, measured
# in the same run: the same time for an ordinary (vanilla) one-job cluster
# once the dedicated claims are gone (released by a pool restart), through
# the negotiator.
# Usage: scripts/bench_parallel.sh [BIN_DIR] [RUNS]
#        (defaults: target/release 5)
set -eu
BIN=$(cd "${1:-target/release}" && pwd)
RUNS=${2:-5}
SKUA="$BIN/skua"
[ -x "$SKUA" ] && [ -x "$BIN/skuad" ] || { echo "build first: cargo build --release -p skua --bins" >&2; exit 2; }

DIR=$(mktemp -d "${TMPDIR:-/tmp}/skua-bench-par.XXXXXX")
chmod 755 "$DIR"
export SKUA_CONFIG="$DIR/pool/skua_config"
cleanup() { "$SKUA" pool stop --dir "$DIR/pool" >/dev/null 2>&1 || true; rm -rf "$DIR"; }
trap cleanup EXIT INT TERM

export _CONDOR_NUM_CPUS=16 _CONDOR_NEGOTIATOR_CYCLE_DELAY=0 _CONDOR_NEGOTIATOR_INTERVAL=5
export _CONDOR_SCHEDD_NAME=bench.example
export _CONDOR_DedicatedScheduler='"DedicatedScheduler@bench.example"'
export _CONDOR_STARTD_ATTRS=DedicatedScheduler
export _CONDOR_START='(Scheduler =?= $(DedicatedScheduler)) || (TARGET.JobUniverse =!= 11)'
export _CONDOR_RANK='Scheduler =?= $(DedicatedScheduler)'
export _CONDOR_SUSPEND=False _CONDOR_WANT_SUSPEND=False _CONDOR_PREEMPT=False

start_pool() {
    "$SKUA" pool start --dir "$DIR/pool" >/dev/null
    i=0
    until [ "$("$SKUA" status -af Name 2>/dev/null | wc -l)" -ge 16 ] && [ -e "$DIR/pool/spool/.schedd_address" ]; do
        i=$((i + 1)); [ $i -lt 300 ] || { echo "the slots did not appear" >&2; exit 1; }
        sleep 0.1
    done
}
start_pool
mkdir -p "$DIR/work/marks"
if [ "$(id -u)" = 0 ]; then
    chown -R nobody "$DIR/work"
    as_user() { setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups -- "$@"; }
else
    as_user() { "$@"; }
fi
cd "$DIR/work"
M="$DIR/work/marks"
cat > node.sh <<EOF
#!/bin/sh
: > "$M/\${_CONDOR_PROCNO:-0}"
# node 0's exit ends the job: every node waits until all have started
i=0
while [ "\$(ls "$M" | wc -l)" -lt "\${_CONDOR_NPROCS:-1}" ] && [ \$i -lt 3000 ]; do
    i=\$((i + 1)); sleep 0.01
done
EOF
chmod 755 node.sh

now() { date +%s.%N; }

# submit_and_time UNIVERSE NODES: seconds from the submit to NODES marks,
# then waits for the job to leave the queue.
submit_and_time() {
    rm -f "$M"/*
    if [ "$1" = parallel ]; then
        count="machine_count = $2"
    else
        count=""
    fi
    printf 'universe = %s\n%s\nexecutable = %s/node.sh\nshould_transfer_files = NO\nrequest_disk = 1024\nqueue\n' \
        "$1" "$count" "$DIR/work" > job.sub
    t0=$(now)
    cluster=$(as_user "$SKUA" submit job.sub | sed -n 's/.*cluster \([0-9]*\)\./\1/p')
    [ -n "$cluster" ] || { echo "the submission failed" >&2; exit 1; }
    i=0
    while [ "$(ls "$M" | wc -l)" -lt "$2" ]; do
        i=$((i + 1)); [ $i -lt 2000 ] || { echo "job $cluster: not all nodes ran" >&2; grep -v DEBUG "$DIR"/pool/log/Sched* | tail -40 >&2; exit 1; }
        sleep 0.005
    done
    t1=$(now)
    while [ -n "$("$SKUA" q "$cluster" -af ProcId | head -1)" ]; do sleep 0.05; done
    echo "$t0 $t1" | awk '{ printf "%.3f\n", $2 - $1 }'
}

median() { sort -n | awk '{ t[NR] = $1 } END { print (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2 }'; }

echo "Skua personal pool, 16 dedicated slots on $(nproc) CPUs; binaries from $BIN; $RUNS run(s) each"
# warm-up: the dedicated scheduler claims all 16 slots and keeps them
w=$(submit_and_time parallel 16)
echo "warm-up (claims acquired through the negotiator): 16 nodes running after $w s"
for n in 1 4 16; do
    : > times.txt
    r=0
    while [ $r -lt "$RUNS" ]; do
        r=$((r + 1))
        submit_and_time parallel "$n" >> times.txt
    done
    printf '%2d-node parallel job, idle dedicated claims: median %s s  (runs: %s)\n' \
        "$n" "$(median < times.txt)" "$(tr '\n' ' ' < times.txt)"
done
# baseline: an ordinary job on unclaimed slots (the dedicated claims are
# released by a restart of the pool)
"$SKUA" pool stop --dir "$DIR/pool" >/dev/null
start_pool
: > times.txt
r=0
while [ $r -lt "$RUNS" ]; do
    r=$((r + 1))
    submit_and_time vanilla 1 >> times.txt
done
printf 'baseline: 1 vanilla job through the negotiator: median %s s  (runs: %s)\n' \
    "$(median < times.txt)" "$(tr '\n' ' ' < times.txt)"
