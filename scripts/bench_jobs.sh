#!/bin/sh
# Throughput benchmark of a personal pool: 16 slots (NUM_CPUS overcommit),
# three workloads, each one cluster, timed from the submit to the moment
# the last job has left the queue:
#   1. N trivial jobs (/bin/true);
#   2. N trivial jobs, each with its standard output transferred back;
#   3. 200 jobs of `sleep 1` (ideal: 200 / 16 slots = 12.5 -> 13 s);
#   4. workload 1 again while POLLERS clients (default 10) loop over
#      `skua q` and `skua status`, as users and their scripts do: the
#      rate against workload 1's (measured in the same run) and the
#      queries' latency (median, worst, failures).
# Each workload runs RUNS times; the median is printed last. The baseline,
# measured in the same run, is this machine spawning /bin/true from four
# shells at once, with nothing else around it.
# Usage: [POLLERS=10] [WORKLOADS="trivial stdout sleep polled"] \
#        scripts/bench_jobs.sh [BIN_DIR] [N] [RUNS]
#        (defaults: target/release 1000 3)
set -eu
BIN=$(cd "${1:-target/release}" && pwd)
N=${2:-1000}
RUNS=${3:-3}
POLLERS=${POLLERS:-10}
WORKLOADS=${WORKLOADS:-trivial stdout sleep polled}
SKUA="$BIN/skua"
[ -x "$SKUA" ] && [ -x "$BIN/skuad" ] || { echo "build first: cargo build --release --workspace" >&2; exit 2; }

DIR=$(mktemp -d "${TMPDIR:-/tmp}/skua-bench.XXXXXX")
chmod 755 "$DIR"
export SKUA_CONFIG="$DIR/pool/skua_config"
POLLER_PIDS=""
stop_pollers() {
    for p in $POLLER_PIDS; do kill "$p" 2>/dev/null || true; done
    for p in $POLLER_PIDS; do wait "$p" 2>/dev/null || true; done
    POLLER_PIDS=""
}
cleanup() { stop_pollers; "$SKUA" pool stop --dir "$DIR/pool" >/dev/null 2>&1 || true; rm -rf "$DIR"; }
trap cleanup EXIT INT TERM

_CONDOR_NUM_CPUS=16 _CONDOR_NEGOTIATOR_CYCLE_DELAY=0 _CONDOR_NEGOTIATOR_INTERVAL=5 \
    "$SKUA" pool start --dir "$DIR/pool" >/dev/null
i=0
until [ "$("$SKUA" status -af Name 2>/dev/null | wc -l)" -ge 16 ]; do
    i=$((i + 1)); [ $i -lt 200 ] || { echo "the slots did not appear" >&2; exit 1; }
    sleep 0.1
done
mkdir -p "$DIR/work/out"
# run by root: root may not submit, the jobs are nobody's (and run as nobody)
if [ "$(id -u)" = 0 ]; then
    chown -R nobody "$DIR/work"
    as_user() { setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups -- "$@"; }
else
    as_user() { "$@"; }
fi
cd "$DIR/work"

now() { date +%s.%N; }

# cpu: "role utime+stime children" in clock ticks for each daemon of this
# pool (children: the startd's reaped starters, and their jobs).
cpu() {
    for pid in $(pgrep -f "skuad (collector|negotiator|schedd|startd)"); do
        tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "SKUA_CONFIG=$SKUA_CONFIG" || continue
        role=$(tr '\0' ' ' < "/proc/$pid/cmdline" | awk '{print $2}')
        awk -v r="$role" '{ print r, $14 + $15, $16 + $17 }' "/proc/$pid/stat"
    done | sort
}

# cpu_report BEFORE AFTER JOBS: CPU milliseconds per job by daemon.
cpu_report() {
    tick=$(getconf CLK_TCK)
    after=$2
    printf '%s\n' "$1" | while read -r role own kids; do
        line=$(printf '%s\n' "$after" | awk -v r="$role" '$1 == r')
        own2=$(echo "$line" | awk '{print $2}')
        kids2=$(echo "$line" | awk '{print $3}')
        awk -v r="$role" -v a="$own" -v b="$own2" -v ka="$kids" -v kb="$kids2" -v n="$JOBS" -v t="$tick" \
            'BEGIN { printf "    %-10s %6.2f ms/job", r, (b - a) * 1000 / t / n;
                     if (kb > ka) printf "   children (starters and jobs) %6.2f ms/job", (kb - ka) * 1000 / t / n;
                     printf "\n" }'
    done
}

# run NAME SUBMIT-TEXT COUNT: prints the elapsed time and the rate.
run_once() {
    printf '%s' "$2" > job.sub
    before=$(cpu)
    t0=$(now)
    cluster=$(as_user "$SKUA" submit job.sub | sed -n 's/.*cluster \([0-9]*\)\./\1/p')
    while [ -n "$("$SKUA" q "$cluster" -af ProcId | head -1)" ]; do
        sleep 0.05
    done
    t1=$(now)
    held=$("$SKUA" history "$cluster" -af ExitCode | grep -vc '^0$' || true)
    echo "$3" "$t0" "$t1" "$held" | awk -v name="$1" '{ d = $3 - $2; printf "%-34s %6d jobs  %8.2f s  %8.1f jobs/s  (%d not exit 0)\n", name, $1, d, $1 / d, $4 }'
    JOBS=$3 cpu_report "$before" "$(cpu)"
}

# run NAME SUBMIT-TEXT COUNT: RUNS times, then the median time and rate
# (and, for trivial jobs, the ratio to the baseline).
run() {
    : > times.txt
    r=0
    while [ $r -lt "$RUNS" ]; do
        r=$((r + 1))
        run_once "$@" | tee run.txt
        awk 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "s") print $(i - 1) }' run.txt >> times.txt
    done
    sort -n times.txt | awk -v name="$1" -v n="$3" -v base="$BASE" '
        { t[NR] = $1 }
        END {
            m = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
            printf "  median of %d: %-22s %8.2f s  %8.1f jobs/s", NR, name, m, n / m
            if (base > 0) printf "  (%.2f of the baseline)", n / m / base
            printf "\n\n"
        }'
}

# baseline COUNT: /bin/true spawned COUNT times from four shells at once;
# prints the rate per second.
baseline() {
    t0=$(now)
    for _ in 1 2 3 4; do
        sh -c 'i=0; while [ $i -lt "$1" ]; do /bin/true; i=$((i + 1)); done' sh $(( $1 / 4 )) &
    done
    wait
    t1=$(now)
    echo "$1" "$t0" "$t1" | awk '{ printf "%.1f\n", $1 / ($3 - $2) }'
}

# poller I: loops over `skua q` and `skua status` until killed, writing
# "q MS" / "status MS" (or "q FAIL") per call to polls.I.txt.
poller() {
    while :; do
        for what in q status; do
            t0=$(date +%s%N)
            if "$SKUA" "$what" >/dev/null 2>&1; then
                echo "$what $(( ($(date +%s%N) - t0) / 1000000 ))"
            else
                echo "$what FAIL"
            fi
        done
    done > "polls.$1.txt"
}

# latency KIND: median and worst of the KIND calls of the pollers, ms.
latency() {
    cat polls.*.txt | awk -v k="$1" '$1 == k && $2 != "FAIL" { print $2 }' | sort -n |
        awk -v k="$1" '{ t[NR] = $1 } END {
            if (NR == 0) { printf "    %-6s no answers\n", k; exit }
            m = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
            printf "    skua %-6s %5d answers  median %6.1f ms  worst %6.1f ms\n", k, NR, m, t[NR] }'
    fails=$(cat polls.*.txt | awk -v k="$1" '$1 == k && $2 == "FAIL"' | wc -l)
    [ "$fails" -eq 0 ] || echo "    skua $1: $fails call(s) failed"
}

has() { case " $WORKLOADS " in *" $1 "*) return 0 ;; esac; return 1; }

TRIVIAL="executable = /bin/true
transfer_executable = false
should_transfer_files = YES
request_disk = 1024
queue $N
"

echo "Skua personal pool, 16 slots on $(nproc) CPUs; binaries from $BIN; $RUNS run(s) each"
BASE=$(baseline "$N")
echo "baseline: this machine spawns $BASE /bin/true per second from four shells"
echo
if has trivial; then
    run "trivial (/bin/true)" "$TRIVIAL" "$N"
    UNPOLLED=$(sort -n times.txt | awk '{ t[NR] = $1 } END { print (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2 }')
fi
BASE=0
if has stdout; then
    run "trivial, stdout transferred back" "executable = /bin/echo
transfer_executable = false
arguments = job \$(Process)
output = out/\$(Process).out
should_transfer_files = YES
request_disk = 1024
queue $N
" "$N"
fi
if has sleep; then
    run "sleep 1 (ideal 13 s)" "executable = /bin/sleep
transfer_executable = false
arguments = 1
should_transfer_files = YES
request_disk = 1024
queue 200
" 200
fi
if has polled && [ "$POLLERS" -gt 0 ]; then
    rm -f polls.*.txt
    i=0
    while [ $i -lt "$POLLERS" ]; do
        i=$((i + 1))
        poller "$i" &
        POLLER_PIDS="$POLLER_PIDS $!"
    done
    run "trivial, $POLLERS clients polling" "$TRIVIAL" "$N"
    stop_pollers
    POLLED=$(sort -n times.txt | awk '{ t[NR] = $1 } END { print (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2 }')
    echo "  queries answered while the jobs ran ($POLLERS clients):"
    latency q
    latency status
    if [ -n "${UNPOLLED:-}" ]; then
        echo "$UNPOLLED $POLLED" | awk '{ printf "  polled / unpolled throughput: %.2f (same run)\n", $1 / $2 }'
    fi
fi
