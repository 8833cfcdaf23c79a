#!/usr/bin/env bash
# Checkpoint speed: how long a self-checkpointing job waits between its
# checkpoint exit and its restarted process, beside `cp` of the same files
# on the same disk in the same run.
#
# A personal pool (one slot) runs the counter of
# crates/skua/tests/data/ckpt_counter.sh with a payload of SIZE MiB in its
# checkpoint (COUNTER_PAYLOAD_MB), checkpointing after every step: RUNS
# checkpoint exits, each followed by the transfer of the whole checkpoint to
# the schedd's store (streamed, synced, renamed into place) and the restart
# of the job in its sandbox. The job itself writes the time of each
# checkpoint exit and of each start (COUNTER_TIMES); the figure is their
# difference. Beside it, `cp` of a file of the same size from the execute
# directory to the spool (the same disk), and `cp` followed by `sync` (the
# store syncs what it writes). Medians of RUNS. Also the schedd's peak
# resident memory (VmHWM) after each size: it must not grow with the size.
#
# Usage: scripts/bench_checkpoint.sh [BIN_DIR]
#        (default: target/release when built, else target/debug)
# Environment: SIZES (MiB, default "100 1024"), RUNS (default 3), KEEP=1 keeps
# the pool's directory (logs, the jobs' time stamps) for a look afterwards.
# Quick check with debug binaries: SIZES="8 32" scripts/bench_checkpoint.sh target/debug
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
SIZES=${SIZES:-100 1024}
RUNS=${RUNS:-3}
SKUA="$BIN/skua"
SKUAD="$BIN/skuad"
[ -x "$SKUA" ] && [ -x "$SKUAD" ] || { echo "build first: cargo build --release --workspace" >&2; exit 2; }
COUNTER=$ROOT/crates/skua/tests/data/ckpt_counter.sh

DIR=$(mktemp -d "${TMPDIR:-/tmp}/skua-bench-ckpt.XXXXXX")
chmod 755 "$DIR"
export SKUA_CONFIG="$DIR/pool/skua_config"
cleanup() {
    "$SKUA" pool stop --dir "$DIR/pool" >/dev/null 2>&1 || true
    if [ -n "${KEEP:-}" ]; then
        rm -rf "$DIR"/work-*/payload.* "$DIR/pool/execute/bench-cp-src"
        echo "kept $DIR" >&2
    else
        rm -rf "$DIR"
    fi
}
trap cleanup EXIT INT TERM

now() { date +%s.%N; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# root may not submit: the job is submitted (and runs) as nobody
if [ "$(id -u)" = 0 ]; then
    as_user() { setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups -- "$@"; }
    USER_NAME=nobody
else
    as_user() { "$@"; }
    USER_NAME=$(id -un)
fi

_CONDOR_NUM_CPUS=1 _CONDOR_NEGOTIATOR_CYCLE_DELAY=0 _CONDOR_NEGOTIATOR_INTERVAL=1 \
    _CONDOR_UPDATE_INTERVAL=1 _CONDOR_ALIVE_INTERVAL=1 _CONDOR_STARTER_UPDATE_INTERVAL=1 \
    "$SKUA" pool start --dir "$DIR/pool" >/dev/null
i=0
until [ "$("$SKUA" status -af Name 2>/dev/null | wc -l)" -ge 1 ] && [ -e "$DIR/pool/spool/.schedd_address" ]; do
    i=$((i + 1)); [ $i -lt 300 ] || { echo "the pool did not come up" >&2; exit 1; }
    sleep 0.1
done

# the schedd's pid: `skuad schedd` running with this pool's SKUA_CONFIG
schedd_pid() {
    for p in /proc/[0-9]*; do
        { tr '\0' ' ' < "$p/cmdline"; } 2>/dev/null | grep -q 'skuad schedd' || continue
        { tr '\0' '\n' < "$p/environ"; } 2>/dev/null | grep -qx "SKUA_CONFIG=$SKUA_CONFIG" || continue
        basename "$p"
        return
    done
}
peak_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }

echo "Skua on $(nproc) CPUs; binaries from $BIN; $RUNS checkpoints per size; job run as $USER_NAME"
printf '%-10s %14s %10s %12s %8s %16s\n' "size" "ckpt->restart" "cp" "cp+sync" "ratio" "schedd peak RSS"
for mb in $SIZES; do
    work="$DIR/work-$mb"
    mkdir -p "$work"
    cp "$COUNTER" "$work/ckpt_counter.sh"
    : > "$work/times"
    chown -R "$USER_NAME" "$work" 2>/dev/null || true
    chmod 777 "$work"
    # counts to RUNS + 1, one step (no sleep) between checkpoints; its
    # checkpoint is every file it made (counter.state, payload.done,
    # payload.1), its output what is left at the end
    cat > "$work/job.sub" <<EOF
executable = ckpt_counter.sh
arguments = $((RUNS + 1)) 1 0
checkpoint_exit_code = 85
should_transfer_files = YES
when_to_transfer_output = ON_EXIT
environment = "COUNTER_TIMES=$work/times COUNTER_PAYLOAD_MB=$mb"
output = out.txt
error = err.txt
log = job.log
request_disk = $(( (mb * 3 + 10) * 1024 ))
queue
EOF
    cluster=$(cd "$work" && as_user "$SKUA" submit job.sub | sed -n 's/.*cluster \([0-9]*\)\./\1/p')
    [ -n "$cluster" ] || { echo "submit failed" >&2; exit 1; }
    waited=0
    while status=$("$SKUA" q "$cluster" -af JobStatus | head -1) && [ -n "$status" ]; do
        if [ "$status" = 5 ] || [ "$waited" -ge 3000 ]; then
            echo "the job is stuck (JobStatus $status):" >&2
            "$SKUA" q "$cluster" -af HoldReason >&2
            "$SKUA" q -better-analyze "$cluster.0" >&2 || true
            exit 1
        fi
        sleep 0.2
        waited=$((waited + 1))
    done
    out=$(cat "$work/counter.out" 2>/dev/null || true)
    [ "$out" = "final count $((RUNS + 1))" ] || {
        echo "the job did not finish right (counter.out: '$out'):" >&2
        "$SKUA" history "$cluster" -af JobStatus ExitCode HoldReason >&2
        exit 1
    }
    # exit -> next start, for each checkpoint
    restart=$(awk '$1 == "exit" { t = $2; c = $3 } $1 == "start" && t != "" && $3 == c { print $2 - t; t = "" }' \
        "$work/times" | median)
    n=$(grep -c '^exit ' "$work/times")
    [ "$n" -ge "$RUNS" ] || { echo "only $n checkpoints timed" >&2; exit 1; }
    pid=$(schedd_pid)
    peak=$(peak_kb "$pid")

    # cp of the same amount, from the execute directory to the spool
    src="$DIR/pool/execute/bench-cp-src"
    dd if=/dev/zero of="$src" bs=1048576 count="$mb" 2>/dev/null
    sync
    cps=""; cpsyncs=""
    for _ in $(seq "$RUNS"); do
        t0=$(now); cp "$src" "$DIR/pool/spool/bench-cp-dst"; t1=$(now)
        sync -f "$DIR/pool/spool/bench-cp-dst"; t2=$(now)
        cps="$cps $(echo "$t0 $t1" | awk '{ print $2 - $1 }')"
        cpsyncs="$cpsyncs $(echo "$t0 $t2" | awk '{ print $2 - $1 }')"
        rm -f "$DIR/pool/spool/bench-cp-dst"
    done
    rm -f "$src"
    cp_med=$(echo "$cps" | tr ' ' '\n' | grep . | median)
    cpsync_med=$(echo "$cpsyncs" | tr ' ' '\n' | grep . | median)
    ratio=$(echo "$restart $cp_med" | awk '{ printf "%.2f", $1 / $2 }')
    printf '%-10s %12.3f s %8.3f s %10.3f s %7sx %13d KB\n' "$mb MiB" "$restart" "$cp_med" "$cpsync_med" "$ratio" "$peak"
done
echo "target: checkpoint exit to restart within 1.5x of cp; the schedd's peak RSS flat across sizes"
