//! The reader never panics (nor hangs) on arbitrary input: any text either loads or is refused
//! with an error, and every knob of a loaded configuration either expands or reports an error.

use proptest::prelude::*;
use skua_config::{Config, LoadOptions, MemoryFiles};

const MAIN: &str = "/c/main";

/// Fragments that exercise the syntax far more often than uniformly random text would.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("A".to_string()),
        Just("B".to_string()),
        Just("STARTD.A".to_string()),
        Just(" = ".to_string()),
        Just(" += ".to_string()),
        Just(" : ".to_string()),
        Just(" @=end\n".to_string()),
        Just("@end\n".to_string()),
        Just("\n".to_string()),
        Just(" \\\n".to_string()),
        Just("# c\n".to_string()),
        Just("$(A)".to_string()),
        Just("$(B:".to_string()),
        Just(")".to_string()),
        Just("(".to_string()),
        Just("$$".to_string()),
        Just("$(DOLLAR)".to_string()),
        Just("$ENV(HOME)".to_string()),
        Just("$INT(A,%05d)".to_string()),
        Just("$REAL(".to_string()),
        Just("$EVAL(1+".to_string()),
        Just("$CHOICE(1,A".to_string()),
        Just("$SUBSTR(A,-2".to_string()),
        Just("$Fpnxqb(A)".to_string()),
        Just("$RANDOM_INTEGER(1,9)".to_string()),
        Just("if ".to_string()),
        Just("elif ".to_string()),
        Just("else\n".to_string()),
        Just("endif\n".to_string()),
        Just("defined A".to_string()),
        Just("version >= 8.0".to_string()),
        Just("include : /c/inc\n".to_string()),
        Just("include ifexist : /c/none\n".to_string()),
        Just("use ROLE : Personal\n".to_string()),
        Just("use FEATURE : PartitionableSlot(".to_string()),
        Just("error : x\n".to_string()),
        Just("LOCAL_CONFIG_FILE = /c/inc\n".to_string()),
        Just("LOCAL_CONFIG_DIR = /c\n".to_string()),
        "[ -~]{0,6}",
        any::<char>().prop_map(|c| c.to_string()),
    ]
}

fn config_text() -> impl Strategy<Value = String> {
    prop::collection::vec(fragment(), 0..40).prop_map(|v| v.concat())
}

fn exercise(main: &str, inc: &str) {
    let files = MemoryFiles::new().with(MAIN, main).with("/c/inc", inc);
    for subsystem in [None, Some("STARTD")] {
        let mut opts = LoadOptions::new()
            .main_file(MAIN)
            .env_var("_CONDOR_B", "$(A) env")
            .env_var("HOME", "/h");
        opts.subsystem = subsystem.map(str::to_string);
        if let Ok(config) = Config::load(&files, &opts) {
            for knob in config.defined_knobs() {
                let _ = config.get(&knob.name);
                let _ = config.expand(&knob.raw);
            }
            let _ = config.get("A");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn structured_input_never_panics(main in config_text(), inc in config_text()) {
        exercise(&main, &inc);
    }

    #[test]
    fn arbitrary_text_never_panics(main in any::<String>(), inc in any::<String>()) {
        exercise(&main, &inc);
    }
}
