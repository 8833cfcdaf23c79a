#!/usr/bin/env python3
"""Reads a job event log with HTCondor's own reader and prints one JSON
object per event: its type, cluster, proc and its attributes.

Usage: read_userlog.py LOG
Exit status 3 when the htcondor2 module is not installed."""
import json
import sys

try:
    import htcondor2
except ImportError:
    print("htcondor2 is not installed", file=sys.stderr)
    sys.exit(3)


def plain(v):
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    return str(v)


events = []
for e in htcondor2.JobEventLog(sys.argv[1]).events(stop_after=0):
    attrs = {k: plain(e[k]) for k in e.keys()}
    events.append(
        {"type": e.type.name, "cluster": e.cluster, "proc": e.proc, "attrs": attrs}
    )
print(json.dumps(events))
