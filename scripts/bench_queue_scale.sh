#!/bin/sh
# Scale of the schedd's queue: N idle jobs (default 100,000) in one
# cluster, in a personal pool with no negotiator and no startd (the jobs
# stay idle). Prints, each the median of RUNS measurements:
#   - the submit time (`skua submit` of one cluster of N jobs);
#   - `skua q` (the batch summary) and `skua q -nobatch` (every job's row)
#     times as the jobs' owner, output to /dev/null;
#   - the schedd's resident memory with the queue loaded (VmRSS);
#   - the schedd's restart time with that queue: from `skua on schedd`
#     (after `skua off schedd`) to the first `skua q -totals` that
#     answers, and the recovery time the schedd logs itself.
# The baseline, measured in the same run: the same tools against an
# empty queue (what a query costs before any job is in it).
# Usage: scripts/bench_queue_scale.sh [BIN_DIR] [N] [RUNS]
#        (defaults: target/release 100000 3)
set -eu
BIN=$(cd "${1:-target/release}" && pwd)
N=${2:-100000}
RUNS=${3:-3}
SKUA="$BIN/skua"
[ -x "$SKUA" ] && [ -x "$BIN/skuad" ] || { echo "build first: cargo build --release -p skua --bins" >&2; exit 2; }

DIR=$(mktemp -d "${TMPDIR:-/tmp}/skua-scale.XXXXXX")
chmod 755 "$DIR"
POOL=""
stop_pool() { [ -z "$POOL" ] || "$SKUA" pool stop --dir "$POOL" >/dev/null 2>&1 || true; POOL=""; }
cleanup() { stop_pool; rm -rf "$DIR"; }
trap cleanup EXIT INT TERM
# the tools and the schedd both check these (HTCondor's defaults: 20,000
# per submission, 100,000 per owner)
export _CONDOR_MAX_JOBS_PER_SUBMISSION=$((N + 1)) _CONDOR_MAX_JOBS_PER_OWNER=$((N + 1))

# start_pool NAME: a fresh pool with no negotiator and no startd.
start_pool() {
    POOL="$DIR/$1"
    export SKUA_CONFIG="$POOL/skua_config"
    _CONDOR_DAEMON_LIST="MASTER, COLLECTOR, SCHEDD" "$SKUA" pool start --dir "$POOL" >/dev/null
    until "$SKUA" q -totals >/dev/null 2>&1; do sleep 0.05; done
}
mkdir -p "$DIR/work"
if [ "$(id -u)" = 0 ]; then
    chown -R nobody "$DIR/work"
    as_user() { setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups -- "$@"; }
else
    as_user() { "$@"; }
fi
cd "$DIR/work"

now() { date +%s.%N; }
# timed CMD...: the seconds CMD took (its output discarded).
timed() {
    t0=$(now)
    "$@" >/dev/null
    t1=$(now)
    echo "$t0 $t1" | awk '{ printf "%.3f\n", $2 - $1 }'
}
median() { sort -n | awk '{ t[NR] = $1 } END { print (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2 }'; }
worst() { sort -n | tail -1; }
schedd_pid() {
    for pid in $(pgrep -f "skuad schedd"); do
        tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "SKUA_CONFIG=$SKUA_CONFIG" && { echo "$pid"; return; }
    done
}
rss_mb() { awk '/^VmRSS/ { printf "%.0f\n", $2 / 1024 }' "/proc/$(schedd_pid)/status"; }

echo "Skua schedd with $N idle jobs in one cluster, $(nproc) CPUs; binaries from $BIN; $RUNS run(s), each in a fresh pool"
printf 'executable = /bin/true\ntransfer_executable = false\nrequest_disk = 1024\nqueue %s\n' "$N" > job.sub
: > empty_q.txt; : > submit.txt; : > q.txt; : > nobatch.txt; : > restart.txt; : > rss.txt; : > rss0.txt
r=0
while [ $r -lt "$RUNS" ]; do
    r=$((r + 1))
    start_pool "pool$r"
    # the baseline, same run: the empty queue
    timed as_user "$SKUA" q >> empty_q.txt
    rss_mb >> rss0.txt
    t=$(timed as_user "$SKUA" submit job.sub)
    echo "$t" >> submit.txt
    q=$(timed as_user "$SKUA" q)
    nb=$(timed as_user "$SKUA" q -nobatch)
    echo "$q" >> q.txt; echo "$nb" >> nobatch.txt
    rss=$(rss_mb); echo "$rss" >> rss.txt
    lines=$(as_user "$SKUA" q -nobatch | wc -l)
    "$SKUA" off schedd >/dev/null
    while [ -n "$(schedd_pid)" ]; do sleep 0.05; done
    t0=$(now)
    "$SKUA" on schedd >/dev/null
    until "$SKUA" q -totals >/dev/null 2>&1; do sleep 0.02; done
    t1=$(now)
    rs=$(echo "$t0 $t1" | awk '{ printf "%.3f\n", $2 - $1 }')
    echo "$rs" >> restart.txt
    logged=$(grep -rh "job queue recovered" "$POOL"/log 2>/dev/null | tail -1 | sed 's/.* in //')
    echo "  run $r: submit $t s; skua q $q s; skua q -nobatch $nb s ($lines lines); schedd resident $rss MB; restart $rs s (recovery logged: $logged)"
    stop_pool
done
echo
echo "medians of $RUNS ($N idle jobs, one cluster):"
echo "  submit (one cluster)        $(median < submit.txt) s (worst $(worst < submit.txt) s)"
echo "  skua q (batch summary)      $(median < q.txt) s (empty queue, same run: $(median < empty_q.txt) s)"
echo "  skua q -nobatch             $(median < nobatch.txt) s"
echo "  schedd resident memory      $(median < rss.txt) MB (empty queue, same run: $(median < rss0.txt) MB)"
echo "  schedd restart to answering $(median < restart.txt) s (worst $(worst < restart.txt) s)"
