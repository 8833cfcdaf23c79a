#!/usr/bin/env python3
"""Makes parallel_cases.jsonl: parallel-universe submit files with the job ads HTCondor
25.14.1's own submit code builds for them, in the case format of the shared submit oracle
(../shared/submit, whose check_submit.py scores `skua submit -dry-run` against them).

    python3 gen_parallel_cases.py [SHARED_SUBMIT_DIR] > parallel_cases.jsonl

SHARED_SUBMIT_DIR defaults to ../../../../../shared/submit from this file (beside the
project). Needs the htcondor==25.14.1 wheel (the oracle drives its C++ submit code)."""
import json, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                         os.path.join(HERE, '../../../../../shared/submit'))
sys.path.insert(0, SHARED)
os.environ.setdefault('CONDOR_CONFIG', os.path.join(SHARED, 'oracle_condor_config'))
import submit_compare as SC  # noqa: E402

RUN = {'run.sh': '#!/bin/sh\necho node $_CONDOR_PROCNO of $_CONDOR_NPROCS\n'}
# Attributes compared besides the oracle's significant ones: what the parallel universe adds.
EXTRA = ['WantIOProxy', 'JobRequiresSandbox', 'CurrentHosts', 'Scheduler']

CASES = [
    ('parallel/basic', 'universe = parallel\nexecutable = run.sh\nmachine_count = 4\nqueue\n'),
    ('parallel/node_count', 'universe = parallel\nexecutable = run.sh\nnode_count = 3\nqueue\n'),
    ('parallel/both_counts', 'universe = parallel\nexecutable = run.sh\nnode_count = 3\nmachine_count = 5\nqueue\n'),
    ('parallel/no_count', 'universe = parallel\nexecutable = run.sh\nqueue\n'),
    ('parallel/empty_count', 'universe = parallel\nexecutable = run.sh\nmachine_count =\nqueue\n'),
    ('parallel/atoi_count', 'universe = parallel\nexecutable = run.sh\nmachine_count = 2.7\nqueue\n'),
    ('parallel/macro_count', 'universe = parallel\nN = 6\nexecutable = run.sh\nmachine_count = $(N)\nqueue\n'),
    ('parallel/node_placeholder',
     'universe = parallel\nexecutable = run.sh\nmachine_count = 2\n'
     'arguments = node $(Node) of $(Process)\noutput = out.$(Node)\nerror = err.$(NODE)\n'
     'log = par.log\nenvironment = "RANK=$(Node) X=1"\n+NodeTag = "n$(node)"\n'
     'transfer_input_files = in.$(Node)\nqueue\n'),
    ('parallel/own_node_macro',
     'universe = parallel\nexecutable = run.sh\nmachine_count = 2\nNode = 9\narguments = $(Node)\nqueue\n'),
    ('parallel/vanilla_node_empty', 'executable = run.sh\narguments = a$(Node)b\nmachine_count = 3\nqueue\n'),
    ('parallel/two_sections',
     'universe = parallel\nexecutable = run.sh\narguments = $(Node)\n'
     'machine_count = 1\nrequirements = (Machine == "head")\nqueue\n'
     'machine_count = 3\nrequirements = (Machine != "head")\nqueue\n'),
    ('parallel/request_cpus',
     'universe = parallel\nexecutable = run.sh\nmachine_count = 2\nrequest_cpus = 4\nrequest_memory = 1G\nqueue\n'),
    ('parallel/queue_n', 'universe = parallel\nexecutable = run.sh\nmachine_count = 2\nqueue 3\n'),
    ('parallel/shutdown_policy',
     'universe = parallel\nexecutable = run.sh\nmachine_count = 2\n+ParallelShutdownPolicy = "WAIT_FOR_ALL"\nqueue\n'),
    ('parallel/initialdir_node',
     'universe = parallel\nexecutable = run.sh\nmachine_count = 2\ninitialdir = d$(Node)\nqueue\n'),
    ('parallel/kill_sig',
     'universe = parallel\nexecutable = run.sh\nmachine_count = 2\nkill_sig = SIGKILL\nqueue\n'),
]


def main():
    worker = os.path.join(SHARED, 'oracle_worker.py')
    for cid, text in CASES:
        case = {'id': cid, 'category': 'parallel', 'source': 'synthetic', 'submit': text,
                'files': dict(RUN)}
        d = SC.materialize(case)
        r = subprocess.run([sys.executable, worker, 'job.sub'], cwd=d, capture_output=True,
                           text=True, env=dict(os.environ, **SC.FIXED_ENV))
        res = json.loads(r.stdout)
        if res['status'] != 'ok':
            case['expect'] = {'status': 'error', 'stage': res.get('stage'),
                              'message': res.get('message')}
        else:
            ads = SC.parse_jobs('\n'.join(j.rstrip('\n') + '\n' for j in res['jobs']))
            names = SC.SIGNIFICANT + EXTRA + [
                n for n in SC.custom_attr_names(text) if n not in SC.SIGNIFICANT]
            case['expect'] = {'status': 'ok', 'njobs': len(ads),
                              'jobs': [SC.job_summary(ad, names, d) for ad in ads]}
        print(json.dumps(case, sort_keys=True))


main()
