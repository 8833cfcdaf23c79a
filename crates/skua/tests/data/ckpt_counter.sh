#!/bin/sh
# A self-checkpointing job: counts to TARGET, one step every STEP seconds,
# saving its count to counter.state every EVERY steps and then exiting with
# 85, its checkpoint exit code (submit with `checkpoint_exit_code = 85`).
# Started again (in the same sandbox after a checkpoint exit, or anywhere
# after an eviction, with its last checkpoint's files put back), it resumes
# from counter.state. Done, it writes `final count TARGET` to counter.out and
# to its standard output, and exits 0.
#
# Usage: ckpt_counter.sh TARGET [EVERY [STEP]]     (defaults: 100 10 1)
#
# On its checkpoint signal (SIGUSR2 by default, `+WantCheckpointSignal`) it
# saves its count and exits 85 at once. On SIGTERM (a vacate's kill signal)
# it saves its count and exits 143: with `when_to_transfer_output =
# ON_EXIT_OR_EVICT` the saved count travels with the evicted sandbox; a job
# without it resumes from its last checkpoint instead.
#
# Optional, for tests and the benchmark (environment):
#   COUNTER_LOG=FILE      append a line per event to FILE (outside the
#                         sandbox): `start COUNT HOST`, `step COUNT`,
#                         `ckpt COUNT`, `term COUNT`, `done COUNT`; the
#                         lines `step` count the work done in all runs
#   COUNTER_TIMES=FILE    append `exit SECONDS COUNT` just before a
#                         checkpoint exit and `start SECONDS COUNT` when a
#                         process starts (SECONDS since the epoch, in ns)
#   COUNTER_PAYLOAD_MB=M  the checkpoint also holds M MiB of data, written
#                         once (files payload.1 .. payload.F)
#   COUNTER_PAYLOAD_FILES=F   (default 1)
#   COUNTER_SIGNAL=SIG    the checkpoint signal to catch (default USR2)
set -u
TARGET=${1:-100}
EVERY=${2:-10}
STEP=${3:-1}
STATE=counter.state

log() { [ -z "${COUNTER_LOG:-}" ] || echo "$*" >> "$COUNTER_LOG"; }
stamp() { [ -z "${COUNTER_TIMES:-}" ] || echo "$1 $(date +%s.%N) $2" >> "$COUNTER_TIMES"; }

count=0
if [ -f "$STATE" ]; then
    count=$(cat "$STATE")
    case $count in
        ''|*[!0-9]*) echo "corrupt checkpoint: $STATE holds '$count'" >&2; exit 1 ;;
    esac
fi
stamp start "$count"
log start "$count" "$(hostname)"
echo "starting at $count of $TARGET"

# The payload: written once, kept by every later checkpoint.
mb=${COUNTER_PAYLOAD_MB:-0}
files=${COUNTER_PAYLOAD_FILES:-1}
if [ "$mb" -gt 0 ] && [ ! -f payload.done ]; then
    each=$(( (mb + files - 1) / files ))
    i=1
    while [ "$i" -le "$files" ]; do
        dd if=/dev/zero of="payload.$i" bs=1048576 count="$each" 2>/dev/null || exit 1
        i=$((i + 1))
    done
    : > payload.done
fi

# Saves the count: a new file renamed over the old, never half written.
save() {
    echo "$count" > "$STATE.new" && mv "$STATE.new" "$STATE" || exit 1
}
checkpoint() {
    save
    log ckpt "$count"
    stamp exit "$count"
    exit 85
}
trap checkpoint "${COUNTER_SIGNAL:-USR2}"
trap 'save; log term "$count"; exit 143' TERM

while [ "$count" -lt "$TARGET" ]; do
    sleep "$STEP"
    count=$((count + 1))
    log step "$count"
    if [ "$count" -lt "$TARGET" ] && [ $((count % EVERY)) -eq 0 ]; then
        checkpoint
    fi
done
save
rm -f payload.*
echo "final count $count" > counter.out
echo "final count $count"
log done "$count"
exit 0
