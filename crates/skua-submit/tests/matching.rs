//! `queue ... matching [files|dirs|any] PATTERNS` as condor_submit expands it, and what the
//! per-item values become in each job (`Iwd`, `UserLog`, arguments, file names). Every expected
//! value is what HTCondor's own submit code (25.14.1) gives for the same submit file and the
//! same directory tree (the case directory written as `/home/u/job`).

use classad::{unparse, ClassAd};
use skua_submit::{submit, MemoryFiles, SubmitOptions};

const DIR: &str = "/home/u/job";

fn opts() -> SubmitOptions {
    SubmitOptions::new("alice", 1, 1_700_000_000, DIR)
}

/// A directory tree under [`DIR`]: paths ending in `/` are (empty) directories.
fn tree(paths: &[&str]) -> MemoryFiles {
    paths.iter().fold(MemoryFiles::new(), |f, p| {
        f.with(&format!("{DIR}/{p}"), "x")
    })
}

fn jobs(text: &str, files: &MemoryFiles) -> Vec<ClassAd> {
    match submit(text, files, &opts()) {
        Ok(s) => s.clusters.into_iter().flat_map(|c| c.jobs).collect(),
        Err(e) => panic!("rejected: {e}\n{text}"),
    }
}

/// The `$(Item)` of each job queued by `queue matching <spec>`.
fn items(spec: &str, files: &MemoryFiles) -> Vec<String> {
    let text = format!("executable = /bin/echo\narguments = \"$(Item)\"\nqueue matching {spec}\n");
    jobs(&text, files)
        .iter()
        .map(|ad| {
            let v = ad.lookup("Arguments").map(unparse).unwrap_or_default();
            v.trim_matches('"').to_string()
        })
        .collect()
}

fn check_items(files: &MemoryFiles, rows: &[(&str, &[&str])]) {
    for (spec, want) in rows {
        assert_eq!(items(spec, files), want.to_vec(), "queue matching {spec}");
    }
}

/// glob(3) as condor_submit calls it: directories come back with a trailing `/` (`*/` and
/// other one-character directory patterns with two), wildcards work in every component, a
/// leading `.` is matched only explicitly, a pattern without wildcards is kept if the path
/// exists; `dirs` keeps only directories where a wildcard is matched (a plain existing file
/// name stays), `files` drops every directory, and the matches are sorted bytewise.
#[test]
fn matching_patterns_expand_as_condor_submit_globs() {
    let files = tree(&[
        "d1/",
        "d2/",
        "data/",
        "a.txt",
        "b.txt",
        "d1/in.txt",
        "d2/in.txt",
        "d1/sub/",
        "d1/sub/deep.txt",
        "run.sh",
        ".hidden/",
        ".h.txt",
        "z dir/",
        "B.txt",
        "_u.txt",
        "d2/x.dat",
        "job.sub",
    ]);
    check_items(
        &files,
        &[
            ("a.txt", &["a.txt"]),
            ("d1", &["d1/"]),
            ("d1/", &["d1/"]),
            ("d1//", &["d1/"]),
            ("nonexist", &[]),
            ("a.txt d1", &["a.txt", "d1/"]),
            ("d*/in*.txt", &["d1/in.txt", "d2/in.txt"]),
            ("d*/", &["d1/", "d2/", "data/"]),
            ("d*//", &["d1/", "d2/", "data/"]),
            ("d1/*", &["d1/in.txt", "d1/sub/"]),
            ("*/*", &["d1/in.txt", "d1/sub/", "d2/in.txt", "d2/x.dat"]),
            ("*/*/", &["d1/sub/"]),
            ("*/*.txt", &["d1/in.txt", "d2/in.txt"]),
            ("d?", &["d1/", "d2/"]),
            ("d[12]", &["d1/", "d2/"]),
            ("d[!1]", &["d2/"]),
            ("*.txt", &["B.txt", "_u.txt", "a.txt", "b.txt"]),
            ("[ab].txt", &["a.txt", "b.txt"]),
            (
                "*",
                &[
                    "B.txt", "_u.txt", "a.txt", "b.txt", "d1/", "d2/", "data/", "job.sub",
                    "run.sh", "z dir/",
                ],
            ),
            ("d1/sub", &["d1/sub/"]),
            ("d1/s*", &["d1/sub/"]),
            ("*/sub/*", &["d1/sub/deep.txt"]),
            ("d*/x.dat", &["d2/x.dat"]),
            ("d1/in.txt", &["d1/in.txt"]),
            ("*/", &["d1//", "d2//", "data//", "z dir//"]),
            ("**/", &["d1/", "d2/", "data/", "z dir/"]),
            ("?1/", &["d1/"]),
            ("*//", &["d1//", "d2//", "data//", "z dir//"]),
            ("'a.txt'", &[]),
            ("\"a.txt\"", &[]),
            ("a.txt,b.txt", &["a.txt", "b.txt"]),
            ("a.txt, d1", &["a.txt", "d1/"]),
            ("*.TXT", &[]),
            ("[A-Z]*", &["B.txt"]),
            ("files a.txt", &["a.txt"]),
            ("files d1", &[]),
            ("files d1/", &[]),
            ("files d1//", &[]),
            ("files nonexist", &[]),
            ("files a.txt d1", &["a.txt"]),
            ("files d*/in*.txt", &["d1/in.txt", "d2/in.txt"]),
            ("files d*/", &[]),
            ("files d*//", &[]),
            ("files d1/*", &["d1/in.txt"]),
            ("files */*", &["d1/in.txt", "d2/in.txt", "d2/x.dat"]),
            ("files */*/", &[]),
            ("files */*.txt", &["d1/in.txt", "d2/in.txt"]),
            ("files d?", &[]),
            ("files d[12]", &[]),
            ("files d[!1]", &[]),
            ("files *.txt", &["B.txt", "_u.txt", "a.txt", "b.txt"]),
            ("files [ab].txt", &["a.txt", "b.txt"]),
            (
                "files *",
                &["B.txt", "_u.txt", "a.txt", "b.txt", "job.sub", "run.sh"],
            ),
            ("files d1/sub", &[]),
            ("files d1/s*", &[]),
            ("files */sub/*", &["d1/sub/deep.txt"]),
            ("files d*/x.dat", &["d2/x.dat"]),
            ("files d1/in.txt", &["d1/in.txt"]),
            ("files */", &[]),
            ("files **/", &[]),
            ("files ?1/", &[]),
            ("files *//", &[]),
            ("files 'a.txt'", &[]),
            ("files \"a.txt\"", &[]),
            ("files a.txt,b.txt", &["a.txt", "b.txt"]),
            ("files a.txt, d1", &["a.txt"]),
            ("files *.TXT", &[]),
            ("files [A-Z]*", &["B.txt"]),
            ("dirs a.txt", &["a.txt"]),
            ("dirs d1", &["d1/"]),
            ("dirs d1/", &["d1/"]),
            ("dirs d1//", &["d1/"]),
            ("dirs nonexist", &[]),
            ("dirs a.txt d1", &["a.txt", "d1/"]),
            ("dirs d*/in*.txt", &[]),
            ("dirs d*/", &["d1/", "d2/", "data/"]),
            ("dirs d*//", &["d1/", "d2/", "data/"]),
            ("dirs d1/*", &["d1/sub/"]),
            ("dirs */*", &["d1/sub/"]),
            ("dirs */*/", &["d1/sub/"]),
            ("dirs */*.txt", &[]),
            ("dirs d?", &["d1/", "d2/"]),
            ("dirs d[12]", &["d1/", "d2/"]),
            ("dirs d[!1]", &["d2/"]),
            ("dirs *.txt", &[]),
            ("dirs [ab].txt", &[]),
            ("dirs *", &["d1/", "d2/", "data/", "z dir/"]),
            ("dirs d1/sub", &["d1/sub/"]),
            ("dirs d1/s*", &["d1/sub/"]),
            ("dirs */sub/*", &[]),
            ("dirs d*/x.dat", &["d2/x.dat"]),
            ("dirs d1/in.txt", &["d1/in.txt"]),
            ("dirs */", &["d1//", "d2//", "data//", "z dir//"]),
            ("dirs **/", &["d1/", "d2/", "data/", "z dir/"]),
            ("dirs ?1/", &["d1/"]),
            ("dirs *//", &["d1//", "d2//", "data//", "z dir//"]),
            ("dirs 'a.txt'", &[]),
            ("dirs \"a.txt\"", &[]),
            ("dirs a.txt,b.txt", &["a.txt", "b.txt"]),
            ("dirs a.txt, d1", &["a.txt", "d1/"]),
            ("dirs *.TXT", &[]),
            ("dirs [A-Z]*", &[]),
            ("any a.txt", &["a.txt"]),
            ("any d1", &["d1/"]),
            ("any d1/", &["d1/"]),
            ("any d1//", &["d1/"]),
            ("any nonexist", &[]),
            ("any a.txt d1", &["a.txt", "d1/"]),
            ("any d*/in*.txt", &["d1/in.txt", "d2/in.txt"]),
            ("any d*/", &["d1/", "d2/", "data/"]),
            ("any d*//", &["d1/", "d2/", "data/"]),
            ("any d1/*", &["d1/in.txt", "d1/sub/"]),
            (
                "any */*",
                &["d1/in.txt", "d1/sub/", "d2/in.txt", "d2/x.dat"],
            ),
            ("any */*/", &["d1/sub/"]),
            ("any */*.txt", &["d1/in.txt", "d2/in.txt"]),
            ("any d?", &["d1/", "d2/"]),
            ("any d[12]", &["d1/", "d2/"]),
            ("any d[!1]", &["d2/"]),
            ("any *.txt", &["B.txt", "_u.txt", "a.txt", "b.txt"]),
            ("any [ab].txt", &["a.txt", "b.txt"]),
            (
                "any *",
                &[
                    "B.txt", "_u.txt", "a.txt", "b.txt", "d1/", "d2/", "data/", "job.sub",
                    "run.sh", "z dir/",
                ],
            ),
            ("any d1/sub", &["d1/sub/"]),
            ("any d1/s*", &["d1/sub/"]),
            ("any */sub/*", &["d1/sub/deep.txt"]),
            ("any d*/x.dat", &["d2/x.dat"]),
            ("any d1/in.txt", &["d1/in.txt"]),
            ("any */", &["d1//", "d2//", "data//", "z dir//"]),
            ("any **/", &["d1/", "d2/", "data/", "z dir/"]),
            ("any ?1/", &["d1/"]),
            ("any *//", &["d1//", "d2//", "data//", "z dir//"]),
            ("any 'a.txt'", &[]),
            ("any \"a.txt\"", &[]),
            ("any a.txt,b.txt", &["a.txt", "b.txt"]),
            ("any a.txt, d1", &["a.txt", "d1/"]),
            ("any *.TXT", &[]),
            ("any [A-Z]*", &["B.txt"]),
        ],
    );
}

#[test]
fn matching_patterns_with_trailing_slashes_and_one_letter_directories() {
    let files = tree(&[
        "d1/",
        "d2/",
        "x/",
        "a.txt",
        "d1/in.txt",
        "d1/sub/",
        "y",
        "job.sub",
    ]);
    check_items(
        &files,
        &[
            ("a.txt/", &["a.txt"]),
            ("x/", &["x//"]),
            ("x//", &["x//"]),
            ("y/", &[]),
            ("y", &["y"]),
            ("d1/in.txt/", &["d1/in.txt"]),
            ("d1/*/", &["d1/sub/"]),
            ("d?/", &["d1/", "d2/"]),
            ("*/in.txt", &["d1/in.txt"]),
            ("*/in.txt/", &["d1/in.txt"]),
            ("x/*", &[]),
            ("?/", &["x//"]),
            ("[xy]/", &["x/"]),
            ("[x]/", &["x/"]),
            ("files a.txt/", &["a.txt"]),
            ("files x/", &[]),
            ("files x//", &[]),
            ("files y/", &[]),
            ("files y", &["y"]),
            ("files d1/in.txt/", &["d1/in.txt"]),
            ("files d1/*/", &[]),
            ("files d?/", &[]),
            ("files */in.txt", &["d1/in.txt"]),
            ("files */in.txt/", &["d1/in.txt"]),
            ("files x/*", &[]),
            ("files ?/", &[]),
            ("files [xy]/", &[]),
            ("files [x]/", &[]),
            ("dirs a.txt/", &["a.txt"]),
            ("dirs x/", &["x//"]),
            ("dirs x//", &["x//"]),
            ("dirs y/", &[]),
            ("dirs y", &["y"]),
            ("dirs d1/in.txt/", &["d1/in.txt"]),
            ("dirs d1/*/", &["d1/sub/"]),
            ("dirs d?/", &["d1/", "d2/"]),
            ("dirs */in.txt", &["d1/in.txt"]),
            ("dirs */in.txt/", &["d1/in.txt"]),
            ("dirs x/*", &[]),
            ("dirs ?/", &["x//"]),
            ("dirs [xy]/", &["x/"]),
            ("dirs [x]/", &["x/"]),
        ],
    );
}

/// (submit file, per job: (attribute, expected value))
type JobRows<'a> = &'a [(&'a str, &'a [&'a [(&'a str, &'a str)]])];

/// What the items become: `Iwd` is the initial directory joined to the submit directory with
/// runs of `/` squeezed and a trailing `/` kept (`initialdir = $(Item)` over `matching dirs`
/// gives `.../d1/`); `UserLog` is joined to that `Iwd` (squeezed: `.../d1/job.log`); the
/// executable is taken from the submit directory, not `Iwd`; items keep their `/` in
/// arguments, file names and `$F` macros.
#[test]
fn per_item_values_of_jobs_queued_over_matching_directories() {
    let files = tree(&[
        "d1/",
        "d2/",
        "data/",
        "a.txt",
        "b.txt",
        "d1/in.txt",
        "d2/in.txt",
        "run.sh",
        ".hidden/",
        "z dir/",
        "job.sub",
    ]);
    let rows: JobRows = &[
        ("executable = /bin/echo\ninitialdir = $(Item)\nqueue matching dirs *\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/data/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/z dir/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\noutput = out.txt\nlog = job.log\nqueue matching dirs *\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("UserLog", "\"/home/u/job/d1/job.log\""), ("Out", "\"out.txt\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("UserLog", "\"/home/u/job/d2/job.log\""), ("Out", "\"out.txt\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/data/\""), ("UserLog", "\"/home/u/job/data/job.log\""), ("Out", "\"out.txt\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/z dir/\""), ("UserLog", "\"/home/u/job/z dir/job.log\""), ("Out", "\"out.txt\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\narguments = $(Item)\nqueue matching dirs *\n", &[&[("Iwd", "\"/home/u/job\""), ("Args", "\"d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Args", "\"d2/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Args", "\"data/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Args", "\"z dir/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\narguments = $(Item) $(ItemIndex) $(Step)\ntransfer_input_files = in.txt\nqueue matching dirs *\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Args", "\"d1/ 0 0\""), ("TransferInput", "\"in.txt\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Args", "\"d2/ 1 0\""), ("TransferInput", "\"in.txt\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/data/\""), ("Args", "\"data/ 2 0\""), ("TransferInput", "\"in.txt\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/z dir/\""), ("Args", "\"z dir/ 3 0\""), ("TransferInput", "\"in.txt\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\noutput = $(Item).out\nerror = $(Item)err\ninput = $(Item)in.txt\nqueue matching dirs *\n", &[&[("Iwd", "\"/home/u/job\""), ("In", "\"d1/in.txt\""), ("Out", "\"d1/.out\""), ("Err", "\"d1/err\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("In", "\"d2/in.txt\""), ("Out", "\"d2/.out\""), ("Err", "\"d2/err\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("In", "\"data/in.txt\""), ("Out", "\"data/.out\""), ("Err", "\"data/err\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("In", "\"z dir/in.txt\""), ("Out", "\"z dir/.out\""), ("Err", "\"z dir/err\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\nexecutable = run.sh\nqueue matching dirs *\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/home/u/job/run.sh\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/home/u/job/run.sh\"")], &[("Iwd", "\"/home/u/job/data/\""), ("Cmd", "\"/home/u/job/run.sh\"")], &[("Iwd", "\"/home/u/job/z dir/\""), ("Cmd", "\"/home/u/job/run.sh\"")]]),
        ("executable = /bin/echo\niwd = $(Item)\nqueue matching dirs *\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/data/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/z dir/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)/\nqueue matching dirs *\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/data/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/z dir/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(D)\n+D = \"$(D)\"\nqueue matching dirs *\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\""), ("D", "\"\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\""), ("D", "\"\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\""), ("D", "\"\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\""), ("D", "\"\"")]]),
        ("executable = /bin/echo\ninitialdir = $(dir)\n+Dirname = \"$(dir)\"\nqueue matching dirs *\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\""), ("Dirname", "\"\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\""), ("Dirname", "\"\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\""), ("Dirname", "\"\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\""), ("Dirname", "\"\"")]]),
        ("executable = /bin/echo\nlog = $(Item)job.log\nqueue matching dirs *\n", &[&[("Iwd", "\"/home/u/job\""), ("UserLog", "\"/home/u/job/d1/job.log\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("UserLog", "\"/home/u/job/d2/job.log\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("UserLog", "\"/home/u/job/data/job.log\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("UserLog", "\"/home/u/job/z dir/job.log\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\nlog = $(Item)/job.log\ninitialdir = $(Item)\nqueue matching dirs *\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("UserLog", "\"/home/u/job/d1/d1/job.log\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("UserLog", "\"/home/u/job/d2/d2/job.log\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/data/\""), ("UserLog", "\"/home/u/job/data/data/job.log\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/z dir/\""), ("UserLog", "\"/home/u/job/z dir/z dir/job.log\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ntransfer_input_files = $(Item)\nshould_transfer_files = YES\nqueue matching dirs *\n", &[&[("Iwd", "\"/home/u/job\""), ("TransferInput", "\"d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("TransferInput", "\"d2/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("TransferInput", "\"data/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("TransferInput", "\"z dir/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\noutput = $(Item).out\nerror = $(Item)err\ninput = $(Item)in.txt\nqueue matching dirs d*\n", &[&[("Iwd", "\"/home/u/job\""), ("In", "\"d1/in.txt\""), ("Out", "\"d1/.out\""), ("Err", "\"d1/err\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("In", "\"d2/in.txt\""), ("Out", "\"d2/.out\""), ("Err", "\"d2/err\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("In", "\"data/in.txt\""), ("Out", "\"data/.out\""), ("Err", "\"data/err\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ntransfer_input_files = $(Item)\nshould_transfer_files = YES\nqueue matching dirs d*\n", &[&[("Iwd", "\"/home/u/job\""), ("TransferInput", "\"d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("TransferInput", "\"d2/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("TransferInput", "\"data/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\noutput = out.txt\nlog = job.log\nqueue matching dirs */\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("UserLog", "\"/home/u/job/d1/job.log\""), ("Out", "\"out.txt\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("UserLog", "\"/home/u/job/d2/job.log\""), ("Out", "\"out.txt\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/data/\""), ("UserLog", "\"/home/u/job/data/job.log\""), ("Out", "\"out.txt\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/z dir/\""), ("UserLog", "\"/home/u/job/z dir/job.log\""), ("Out", "\"out.txt\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\noutput = $(Item).out\nerror = $(Item)err\ninput = $(Item)in.txt\nqueue matching any *\n", &[&[("Iwd", "\"/home/u/job\""), ("In", "\"a.txtin.txt\""), ("Out", "\"a.txt.out\""), ("Err", "\"a.txterr\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("In", "\"b.txtin.txt\""), ("Out", "\"b.txt.out\""), ("Err", "\"b.txterr\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("In", "\"d1/in.txt\""), ("Out", "\"d1/.out\""), ("Err", "\"d1/err\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("In", "\"d2/in.txt\""), ("Out", "\"d2/.out\""), ("Err", "\"d2/err\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("In", "\"data/in.txt\""), ("Out", "\"data/.out\""), ("Err", "\"data/err\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("In", "\"job.subin.txt\""), ("Out", "\"job.sub.out\""), ("Err", "\"job.suberr\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("In", "\"run.shin.txt\""), ("Out", "\"run.sh.out\""), ("Err", "\"run.sherr\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("In", "\"z dir/in.txt\""), ("Out", "\"z dir/.out\""), ("Err", "\"z dir/err\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\noutput = $(Item).out\nerror = $(Item)err\ninput = $(Item)in.txt\nqueue dir matching dirs *\n", &[&[("Iwd", "\"/home/u/job\""), ("In", "\"in.txt\""), ("Out", "\".out\""), ("Err", "\"err\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("In", "\"in.txt\""), ("Out", "\".out\""), ("Err", "\"err\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("In", "\"in.txt\""), ("Out", "\".out\""), ("Err", "\"err\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("In", "\"in.txt\""), ("Out", "\".out\""), ("Err", "\"err\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\nqueue D matching dirs d*\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\noutput = out.txt\nlog = job.log\nqueue D matching dirs d*\n", &[&[("Iwd", "\"/home/u/job\""), ("UserLog", "\"/home/u/job/job.log\""), ("Out", "\"out.txt\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("UserLog", "\"/home/u/job/job.log\""), ("Out", "\"out.txt\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("UserLog", "\"/home/u/job/job.log\""), ("Out", "\"out.txt\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\narguments = $(Item)\nqueue D matching dirs d*\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(D)\n+D = \"$(D)\"\nqueue D matching dirs d*\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/bin/echo\""), ("D", "\"d1/\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/bin/echo\""), ("D", "\"d2/\"")], &[("Iwd", "\"/home/u/job/data/\""), ("Cmd", "\"/bin/echo\""), ("D", "\"data/\"")]]),
        ("executable = /bin/echo\narguments = $(Item)\nqueue 2 matching dirs d*\n", &[&[("Iwd", "\"/home/u/job\""), ("Args", "\"d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Args", "\"d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Args", "\"d2/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Args", "\"d2/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Args", "\"data/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Args", "\"data/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ntransfer_input_files = $(Item)\nshould_transfer_files = YES\nqueue 2 matching dirs d*\n", &[&[("Iwd", "\"/home/u/job\""), ("TransferInput", "\"d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("TransferInput", "\"d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("TransferInput", "\"d2/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("TransferInput", "\"d2/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("TransferInput", "\"data/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("TransferInput", "\"data/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\narguments = $(Item)\nqueue matching dirs d1 d2\n", &[&[("Iwd", "\"/home/u/job\""), ("Args", "\"d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Args", "\"d2/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\noutput = $(Item).out\nerror = $(Item)err\ninput = $(Item)in.txt\nqueue matching dirs [1:] *\n", &[&[("Iwd", "\"/home/u/job\""), ("In", "\"d2/in.txt\""), ("Out", "\"d2/.out\""), ("Err", "\"d2/err\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("In", "\"data/in.txt\""), ("Out", "\"data/.out\""), ("Err", "\"data/err\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("In", "\"z dir/in.txt\""), ("Out", "\"z dir/.out\""), ("Err", "\"z dir/err\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\nlog = $(Item)job.log\nqueue matching d*\n", &[&[("Iwd", "\"/home/u/job\""), ("UserLog", "\"/home/u/job/d1/job.log\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("UserLog", "\"/home/u/job/d2/job.log\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("UserLog", "\"/home/u/job/data/job.log\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\noutput = out.txt\nlog = job.log\nqueue matching files d*\n", &[]),
        ("executable = /bin/echo\ninitialdir = $(Item)\nqueue matching dirs d1/\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\nexecutable = run.sh\nqueue matching dirs d1/\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/home/u/job/run.sh\"")]]),
        ("executable = /bin/echo\ninitialdir = $(D)\n+D = \"$(D)\"\nqueue matching dirs d1/\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\""), ("D", "\"\"")]]),
        ("executable = /bin/echo\narguments = $(Item)\nqueue matching dirs d*/in.txt\n", &[&[("Iwd", "\"/home/u/job\""), ("Args", "\"d1/in.txt\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Args", "\"d2/in.txt\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(dir)\n+Dirname = \"$(dir)\"\nqueue matching files */in.txt\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\""), ("Dirname", "\"\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\""), ("Dirname", "\"\"")]]),
    ];
    check_jobs(&files, rows);
}

fn check_jobs(files: &MemoryFiles, rows: JobRows) {
    for (text, want) in rows {
        let ads = jobs(text, files);
        assert_eq!(ads.len(), want.len(), "number of jobs of\n{text}");
        for (i, (ad, attrs)) in ads.iter().zip(want.iter()).enumerate() {
            for (name, value) in attrs.iter() {
                let got = ad.lookup(name).map(unparse).unwrap_or_default();
                assert_eq!(&got, value, "job {i} {name} of\n{text}");
            }
        }
    }
}

/// More per-item values: `$Fp`/`$Fn` of items, an executable inside the matched directory, a
/// `transfer_executable = false` executable left as written, doubled slashes squeezed, remaps.
#[test]
fn per_item_values_with_executables_and_transfer_lists() {
    let files = tree(&[
        "d1/",
        "d2/",
        "a.txt",
        "d1/in.txt",
        "d2/in.txt",
        "d1/run.sh",
        "d2/run.sh",
        "run.sh",
        "job.sub",
    ]);
    let rows: JobRows = &[
        ("executable = /bin/echo\ninitialdir = $Fp(Item)\nqueue matching dirs d*\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\ntransfer_input_files = $(Item)in.txt, $(Item), in.txt\nqueue matching dirs d*\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("TransferInput", "\"d1/in.txt,d1/,in.txt\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("TransferInput", "\"d2/in.txt,d2/,in.txt\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\noutput = $Fn(Item).out\nerror = $Fnx(Item).err\nqueue matching dirs d*\n", &[&[("Iwd", "\"/home/u/job\""), ("Out", "\".out\""), ("Err", "\".err\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Out", "\".out\""), ("Err", "\".err\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = $(Item)run.sh\nqueue matching dirs d*\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/home/u/job/d1/run.sh\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/home/u/job/d2/run.sh\"")]]),
        ("executable = $(Item)run.sh\ninitialdir = $(Item)\nqueue matching dirs d*\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/home/u/job/d1/run.sh\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/home/u/job/d2/run.sh\"")]]),
        ("executable = run.sh\ninitialdir = $(Item)\ntransfer_executable = false\nqueue matching dirs d*\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"run.sh\""), ("TransferExecutable", "false")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"run.sh\""), ("TransferExecutable", "false")]]),
        ("executable = /bin/echo\ninitialdir =\nqueue matching dirs d*\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\ninput = in.txt\nshould_transfer_files = YES\nqueue matching dirs d*\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("In", "\"in.txt\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("In", "\"in.txt\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)//\nqueue matching dirs d*\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\ntransfer_output_files = out/\ntransfer_output_remaps = \"out=$(Item)res\"\nqueue matching dirs d*\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("TransferOutputRemaps", "\"out=d1/res\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("TransferOutputRemaps", "\"out=d2/res\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\n+Iwd2 = \"$(initialdir)\"\nqueue matching dirs d*\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/bin/echo\""), ("Iwd2", "\"d1/\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/bin/echo\""), ("Iwd2", "\"d2/\"")]]),
        ("executable = /bin/echo\niwd = $(Item)\narguments = \"$(Item) $(Item)x\"\nqueue matching dirs d*\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Arguments", "\"d1/ d1/x\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Arguments", "\"d2/ d2/x\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\nuniverse = local\nlog = l.log\nqueue matching dirs d*\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("UserLog", "\"/home/u/job/d1/l.log\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("UserLog", "\"/home/u/job/d2/l.log\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\nuniverse = scheduler\nqueue matching dirs d*\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(d)\nqueue matching dirs d*\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitial_dir = $(Item)\nqueue matching dirs d*\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\nInitialDir = $(Item)\nerror = e\nqueue matching dirs d*\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Err", "\"e\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Err", "\"e\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $Fp(Item)\nqueue matching files */in.txt\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\noutput = $Fn(Item).out\nerror = $Fnx(Item).err\nqueue matching files */in.txt\n", &[&[("Iwd", "\"/home/u/job\""), ("Out", "\"in.out\""), ("Err", "\"in.txt.err\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Out", "\"in.out\""), ("Err", "\"in.txt.err\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = $(Item)run.sh\nqueue matching files */in.txt\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/home/u/job/d1/in.txtrun.sh\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/home/u/job/d2/in.txtrun.sh\"")]]),
        ("executable = /bin/echo\ninitialdir =\nqueue matching files */in.txt\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(d)\nqueue matching files */in.txt\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $Fp(Item)\nqueue matching d*/\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\ntransfer_input_files = $(Item)in.txt, $(Item), in.txt\nqueue matching d*/\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("TransferInput", "\"d1/in.txt,d1/,in.txt\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("TransferInput", "\"d2/in.txt,d2/,in.txt\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\noutput = $Fn(Item).out\nerror = $Fnx(Item).err\nqueue matching d*/\n", &[&[("Iwd", "\"/home/u/job\""), ("Out", "\".out\""), ("Err", "\".err\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Out", "\".out\""), ("Err", "\".err\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = $(Item)run.sh\nqueue matching d*/\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/home/u/job/d1/run.sh\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/home/u/job/d2/run.sh\"")]]),
        ("executable = $(Item)run.sh\ninitialdir = $(Item)\nqueue matching d*/\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/home/u/job/d1/run.sh\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/home/u/job/d2/run.sh\"")]]),
        ("executable = run.sh\ninitialdir = $(Item)\ntransfer_executable = false\nqueue matching d*/\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"run.sh\""), ("TransferExecutable", "false")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"run.sh\""), ("TransferExecutable", "false")]]),
        ("executable = /bin/echo\ninitialdir =\nqueue matching d*/\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\ninput = in.txt\nshould_transfer_files = YES\nqueue matching d*/\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("In", "\"in.txt\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("In", "\"in.txt\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)//\nqueue matching d*/\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\ntransfer_output_files = out/\ntransfer_output_remaps = \"out=$(Item)res\"\nqueue matching d*/\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("TransferOutputRemaps", "\"out=d1/res\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("TransferOutputRemaps", "\"out=d2/res\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\n+Iwd2 = \"$(initialdir)\"\nqueue matching d*/\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/bin/echo\""), ("Iwd2", "\"d1/\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/bin/echo\""), ("Iwd2", "\"d2/\"")]]),
        ("executable = /bin/echo\niwd = $(Item)\narguments = \"$(Item) $(Item)x\"\nqueue matching d*/\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Arguments", "\"d1/ d1/x\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Arguments", "\"d2/ d2/x\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\nuniverse = local\nlog = l.log\nqueue matching d*/\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("UserLog", "\"/home/u/job/d1/l.log\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("UserLog", "\"/home/u/job/d2/l.log\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\nuniverse = scheduler\nqueue matching d*/\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(d)\nqueue matching d*/\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitial_dir = $(Item)\nqueue matching d*/\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\nInitialDir = $(Item)\nerror = e\nqueue matching d*/\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Err", "\"e\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Err", "\"e\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $Fp(Item)\nqueue d in d1/, d2/\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\ntransfer_input_files = $(Item)in.txt, $(Item), in.txt\nqueue d in d1/, d2/\n", &[&[("Iwd", "\"/home/u/job\""), ("TransferInput", "\"in.txt,in.txt\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("TransferInput", "\"in.txt,in.txt\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\noutput = $Fn(Item).out\nerror = $Fnx(Item).err\nqueue d in d1/, d2/\n", &[&[("Iwd", "\"/home/u/job\""), ("Out", "\"Item.out\""), ("Err", "\"Item.err\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Out", "\"Item.out\""), ("Err", "\"Item.err\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = $(Item)run.sh\nqueue d in d1/, d2/\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/home/u/job/run.sh\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/home/u/job/run.sh\"")]]),
        ("executable = $(Item)run.sh\ninitialdir = $(Item)\nqueue d in d1/, d2/\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/home/u/job/run.sh\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/home/u/job/run.sh\"")]]),
        ("executable = run.sh\ninitialdir = $(Item)\ntransfer_executable = false\nqueue d in d1/, d2/\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"run.sh\""), ("TransferExecutable", "false")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"run.sh\""), ("TransferExecutable", "false")]]),
        ("executable = /bin/echo\ninitialdir =\nqueue d in d1/, d2/\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\ninput = in.txt\nshould_transfer_files = YES\nqueue d in d1/, d2/\n", &[&[("Iwd", "\"/home/u/job\""), ("In", "\"in.txt\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("In", "\"in.txt\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)//\nqueue d in d1/, d2/\n", &[&[("Iwd", "\"/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\ntransfer_output_files = out/\ntransfer_output_remaps = \"out=$(Item)res\"\nqueue d in d1/, d2/\n", &[&[("Iwd", "\"/home/u/job\""), ("TransferOutputRemaps", "\"out=res\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("TransferOutputRemaps", "\"out=res\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\n+Iwd2 = \"$(initialdir)\"\nqueue d in d1/, d2/\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\""), ("Iwd2", "\"\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\""), ("Iwd2", "\"\"")]]),
        ("executable = /bin/echo\niwd = $(Item)\narguments = \"$(Item) $(Item)x\"\nqueue d in d1/, d2/\n", &[&[("Iwd", "\"/home/u/job\""), ("Arguments", "\"x\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Arguments", "\"x\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\nuniverse = local\nlog = l.log\nqueue d in d1/, d2/\n", &[&[("Iwd", "\"/home/u/job\""), ("UserLog", "\"/home/u/job/l.log\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("UserLog", "\"/home/u/job/l.log\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\nuniverse = scheduler\nqueue d in d1/, d2/\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(d)\nqueue d in d1/, d2/\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitial_dir = $(Item)\nqueue d in d1/, d2/\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\nInitialDir = $(Item)\nerror = e\nqueue d in d1/, d2/\n", &[&[("Iwd", "\"/home/u/job\""), ("Err", "\"e\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Err", "\"e\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $Fp(Item)\nqueue matching dirs d1 d2\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\ntransfer_input_files = $(Item)in.txt, $(Item), in.txt\nqueue matching dirs d1 d2\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("TransferInput", "\"d1/in.txt,d1/,in.txt\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("TransferInput", "\"d2/in.txt,d2/,in.txt\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\noutput = $Fn(Item).out\nerror = $Fnx(Item).err\nqueue matching dirs d1 d2\n", &[&[("Iwd", "\"/home/u/job\""), ("Out", "\".out\""), ("Err", "\".err\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Out", "\".out\""), ("Err", "\".err\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = $(Item)run.sh\nqueue matching dirs d1 d2\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/home/u/job/d1/run.sh\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/home/u/job/d2/run.sh\"")]]),
        ("executable = $(Item)run.sh\ninitialdir = $(Item)\nqueue matching dirs d1 d2\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/home/u/job/d1/run.sh\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/home/u/job/d2/run.sh\"")]]),
        ("executable = run.sh\ninitialdir = $(Item)\ntransfer_executable = false\nqueue matching dirs d1 d2\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"run.sh\""), ("TransferExecutable", "false")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"run.sh\""), ("TransferExecutable", "false")]]),
        ("executable = /bin/echo\ninitialdir =\nqueue matching dirs d1 d2\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\ninput = in.txt\nshould_transfer_files = YES\nqueue matching dirs d1 d2\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("In", "\"in.txt\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("In", "\"in.txt\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)//\nqueue matching dirs d1 d2\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\ntransfer_output_files = out/\ntransfer_output_remaps = \"out=$(Item)res\"\nqueue matching dirs d1 d2\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("TransferOutputRemaps", "\"out=d1/res\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("TransferOutputRemaps", "\"out=d2/res\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\n+Iwd2 = \"$(initialdir)\"\nqueue matching dirs d1 d2\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/bin/echo\""), ("Iwd2", "\"d1/\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/bin/echo\""), ("Iwd2", "\"d2/\"")]]),
        ("executable = /bin/echo\niwd = $(Item)\narguments = \"$(Item) $(Item)x\"\nqueue matching dirs d1 d2\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Arguments", "\"d1/ d1/x\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Arguments", "\"d2/ d2/x\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\nuniverse = local\nlog = l.log\nqueue matching dirs d1 d2\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("UserLog", "\"/home/u/job/d1/l.log\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("UserLog", "\"/home/u/job/d2/l.log\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(Item)\nuniverse = scheduler\nqueue matching dirs d1 d2\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitialdir = $(d)\nqueue matching dirs d1 d2\n", &[&[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\ninitial_dir = $(Item)\nqueue matching dirs d1 d2\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Cmd", "\"/bin/echo\"")]]),
        ("executable = /bin/echo\nInitialDir = $(Item)\nerror = e\nqueue matching dirs d1 d2\n", &[&[("Iwd", "\"/home/u/job/d1/\""), ("Err", "\"e\""), ("Cmd", "\"/bin/echo\"")], &[("Iwd", "\"/home/u/job/d2/\""), ("Err", "\"e\""), ("Cmd", "\"/bin/echo\"")]]),
    ];
    check_jobs(&files, rows);
}
