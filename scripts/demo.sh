#!/bin/sh
# Skua's demonstration: a personal pool with several slots runs a cluster
# of jobs with input and output files, showing the queue as it drains and
# the history at the end. Usage: scripts/demo.sh [BIN_DIR] (default
# target/release). Everything lives in a temporary directory, removed at
# the end; the pool is stopped even if the demo is interrupted.
set -eu
BIN=${1:-target/release}
BIN=$(cd "$BIN" && pwd)
SKUA="$BIN/skua"
[ -x "$SKUA" ] && [ -x "$BIN/skuad" ] || { echo "build first: cargo build --release --workspace" >&2; exit 2; }

DEMO=$(mktemp -d "${TMPDIR:-/tmp}/skua-demo.XXXXXX")
# Run by root, the daemons run each job as its owner, and root may not
# submit (as in HTCondor): the demo's user is then `nobody`, whose files
# the pool reaches through this directory.
chmod 755 "$DEMO"
if [ "$(id -u)" = 0 ]; then
    as_user() { setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups -- "$@"; }
else
    as_user() { "$@"; }
fi
export SKUA_CONFIG="$DEMO/pool/skua_config"
cleanup() { "$SKUA" pool stop --dir "$DEMO/pool" >/dev/null 2>&1 || true; [ -n "${SKUA_DEMO_KEEP:-}" ] || rm -rf "$DEMO"; }
trap cleanup EXIT INT TERM

echo "== a personal pool with 4 slots in $DEMO/pool"
_CONDOR_NUM_CPUS=4 _CONDOR_ALIVE_INTERVAL=2 "$SKUA" pool start --dir "$DEMO/pool"
i=0
until [ "$("$SKUA" status -af Name 2>/dev/null | wc -l)" -ge 4 ]; do
    i=$((i + 1)); [ $i -lt 100 ] || { echo "the slots did not appear" >&2; exit 1; }
    sleep 0.2
done
"$SKUA" status

echo
echo "== a cluster of 8 jobs: each counts the words of its input and sleeps a little"
mkdir -p "$DEMO/work/inputs"
[ "$(id -u)" = 0 ] && chown nobody "$DEMO/work"
cd "$DEMO/work"
n=0
while [ $n -lt 8 ]; do
    seq 1 $((1000 * (n + 1))) | sed 's/^/word/' > "inputs/part.$n"
    n=$((n + 1))
done
cat > count.sh <<'JOB'
#!/bin/sh
# $1: the part to count
words=$(wc -w < "part.$1")
sleep $(( $1 % 3 + 1 ))
echo "part $1: $words words, counted on $(hostname) in $_CONDOR_SCRATCH_DIR" > "result.$1"
echo "done with part $1"
JOB
chmod +x count.sh
cat > count.sub <<'SUB'
executable              = count.sh
arguments               = $(Process)
transfer_input_files    = inputs/part.$(Process)
should_transfer_files   = YES
when_to_transfer_output = ON_EXIT
output                  = out/count.$(Process).out
error                   = out/count.$(Process).err
log                     = count.log
request_memory          = 64
request_disk            = 10240
queue 8
SUB
as_user mkdir -p out
cat count.sub
as_user "$SKUA" submit count.sub

echo
echo "== the queue while the jobs run"
i=0
while :; do
    states=$(as_user "$SKUA" q -af JobStatus)
    left=$(printf '%s' "$states" | grep -c . || true)
    running=$(printf '%s\n' "$states" | grep -c '^2$' || true)
    held=$(printf '%s\n' "$states" | grep -c '^5$' || true)
    echo "$(date +%T)  jobs left: $left (running: $running, held: $held)"
    [ "$left" -eq 0 ] && break
    if [ "$held" -gt 0 ]; then as_user "$SKUA" q -hold; exit 1; fi
    if [ $i -eq 2 ]; then as_user "$SKUA" q -nobatch; fi
    i=$((i + 1)); [ $i -lt 300 ] || { echo "the jobs did not finish" >&2; exit 1; }
    sleep 1
done

echo
echo "== the history"
as_user "$SKUA" history
echo
echo "== the outputs, back beside the submit file"
cat result.*
cat out/count.0.out
echo
echo "== the job event log (first events)"
head -12 count.log
