//! The submit-language reader must never panic, whatever the text (queue statements, macros,
//! conditionals, quoting): it either builds job ads or returns an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use skua_submit::{submit, MemoryFiles, SubmitOptions};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let files = MemoryFiles::new()
        .with("/s/items.txt", "a b\nc, d\n")
        .with("/s/x.dat", "");
    let mut opts = SubmitOptions::new("fuzz", 1, 1_700_000_000, "/s");
    opts.max_jobs_per_submission = Some(1000);
    let _ = submit(&text, &files, &opts);
    let _ = skua_submit::parse_queue_args(&text);
});
