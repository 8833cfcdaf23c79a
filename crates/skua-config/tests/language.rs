//! One test per construct of the configuration language and per error, through the public API.

use skua_config::{Config, ConfigError, LoadOptions, MemoryFiles, Origin};

const MAIN: &str = "/etc/skua/skua_config";

fn load_with(files: MemoryFiles, opts: LoadOptions) -> Result<Config, ConfigError> {
    Config::load(&files, &opts.main_file(MAIN))
}

fn load(text: &str) -> Config {
    load_with(MemoryFiles::new().with(MAIN, text), LoadOptions::new()).expect("valid config")
}

fn load_err(text: &str) -> ConfigError {
    load_with(MemoryFiles::new().with(MAIN, text), LoadOptions::new())
        .expect_err("configuration must be refused")
}

fn get(c: &Config, name: &str) -> Option<String> {
    c.get(name).expect("expansion terminates")
}

fn val(c: &Config, name: &str) -> String {
    get(c, name).unwrap_or_else(|| panic!("{name} should be defined"))
}

fn line_of(e: &ConfigError) -> usize {
    e.location().map_or(0, |l| l.line)
}

// ---------------------------------------------------------------- basic syntax

#[test]
fn assignments_trim_and_keep_inner_text() {
    let c = load("FOO = bar\nfoo2=  spaced   value  \n  INDENTED   =   x y  \nEQ = a = b\nURL = http://h:9618/?x=1\n");
    assert_eq!(val(&c, "FOO"), "bar");
    assert_eq!(val(&c, "foo2"), "spaced   value");
    assert_eq!(val(&c, "INDENTED"), "x y");
    assert_eq!(val(&c, "EQ"), "a = b");
    assert_eq!(val(&c, "URL"), "http://h:9618/?x=1");
    assert_eq!(get(&c, "NOT_DEFINED_ANYWHERE"), None);
}

#[test]
fn names_are_case_insensitive_and_later_definitions_win() {
    let c = load("Foo = 1\nFOO = 2\nfoo = 3\nBAR = $(fOO)\n");
    assert_eq!(val(&c, "FOO"), "3");
    assert_eq!(val(&c, "bar"), "3");
}

#[test]
fn comments_only_at_line_start() {
    let c = load("# a comment\nA = 1 # not a comment\n   # indented\nD = x#y\n#C = 3\n");
    assert_eq!(val(&c, "A"), "1 # not a comment");
    assert_eq!(val(&c, "D"), "x#y");
    assert_eq!(get(&c, "C"), None);
}

#[test]
fn empty_values_are_undefined_and_shadow_defaults() {
    let c = load("E =\nC = x\nC =\nSTART =\nR = [$(C)]\n");
    assert_eq!(get(&c, "E"), None);
    assert_eq!(get(&c, "C"), None);
    assert_eq!(get(&c, "START"), None);
    assert_eq!(val(&c, "R"), "[]");
}

#[test]
fn append_colon_and_ini_headers() {
    let c = load("[section]\nA = 1\nA += 2\nB += x\nH : colon\nJ : k = v\nDAEMON_LIST += FOO\n");
    assert_eq!(val(&c, "A"), "1 2");
    assert_eq!(val(&c, "B"), "x");
    assert_eq!(val(&c, "H"), "colon");
    assert_eq!(val(&c, "J"), "k = v");
    assert_eq!(val(&c, "DAEMON_LIST"), "MASTER FOO");
    assert!(c.warnings().iter().any(|w| w.message.contains("obsolete")));
}

#[test]
fn append_and_self_reference_use_what_a_lookup_finds_at_that_line() {
    let files = MemoryFiles::new().with(
        MAIN,
        "STARTD.L.A = base\nL.A += more\nSTARTD.B += x\nSTARTD.C = 0\nL.C = $(C) y\n",
    );
    let opts = LoadOptions::new().subsystem("STARTD").local_name("L");
    let c = load_with(files, opts).expect("valid");
    assert_eq!(val(&c, "A"), "base more");
    assert_eq!(val(&c, "B"), "x");
    assert_eq!(val(&c, "C"), "0 y");
}

#[test]
fn knob_names_may_hold_macros() {
    let c = load("N = X\n$(N)_FOO = 1\nA$(N) += 2\n");
    assert_eq!(val(&c, "X_FOO"), "1");
    assert_eq!(val(&c, "AX"), "2");
    let e = load_err("$(NOPE) = 1\n");
    assert!(
        matches!(&e, ConfigError::IllegalName { name, .. } if name.is_empty()),
        "{e}"
    );
}

#[test]
fn last_line_without_newline_is_kept_raw() {
    let c = load("A = one \\\n   two");
    assert_eq!(val(&c, "A"), "one    two");
}

// ---------------------------------------------------------------- continuation

#[test]
fn continuation_lines() {
    let c = load("A = one \\\n  two \\\n  three\nB = one\\\ntwo\nC = one \\\n\nD = d\n");
    assert_eq!(val(&c, "A"), "one two three");
    assert_eq!(val(&c, "B"), "onetwo");
    assert_eq!(val(&c, "C"), "one ");
    assert_eq!(val(&c, "D"), "d");
}

#[test]
fn comments_inside_continuations_follow_htcondor() {
    let c = load("A = one \\\n# hello \\\n# more \\\n  two\nB = one \\\n# hello world\n");
    assert_eq!(val(&c, "A"), "one two");
    // A comment without a trailing backslash ends the line and leaves its last character.
    assert_eq!(val(&c, "B"), "one d");
    let e = load_err("A = one \\\n# a comment\n  two\n");
    assert!(matches!(e, ConfigError::Unparseable { .. }), "{e}");
    assert_eq!(line_of(&e), 3);
}

// ---------------------------------------------------------------- multi-line values

#[test]
fn multiline_values() {
    let c =
        load("X = xval\nA @=end\nline one\n  line two\n# dropped\n$(X) three\n@end\nB = after\n");
    assert_eq!(val(&c, "A"), "line one\nline two\nxval three");
    assert_eq!(val(&c, "B"), "after");
}

#[test]
fn multiline_unterminated_is_an_error() {
    let e = load_err("A = 1\nB @=end\nline\n");
    assert!(
        matches!(&e, ConfigError::UnterminatedMultiline { tag, name, .. } if tag == "end" && name == "B"),
        "{e}"
    );
    assert_eq!(line_of(&e), 2);
}

// ---------------------------------------------------------------- macros

#[test]
fn macros_are_lazy() {
    let c = load("B = $(C)\nD = pre-$(C)-post\nC = first\nC = final\n");
    assert_eq!(val(&c, "B"), "final");
    assert_eq!(val(&c, "D"), "pre-final-post");
}

#[test]
fn macro_defaults() {
    let c = load("A = alpha\nB = $(A:dflt)\nC = $(NOPE:dflt)\nD = $(NOPE:$(A))\nE = $(NOPE:)\nEMPTY =\nG = $(EMPTY:fb)\nH = $(NOPE:a(b)c)\n");
    assert_eq!(val(&c, "B"), "alpha");
    assert_eq!(val(&c, "C"), "dflt");
    assert_eq!(val(&c, "D"), "alpha");
    assert_eq!(get(&c, "E"), None);
    assert_eq!(val(&c, "G"), "fb");
    assert_eq!(val(&c, "H"), "a(b)c");
}

#[test]
fn self_references_expand_at_definition() {
    let c = load("A = 1\nA = $(A) 2\nA = $(a) 3\nB = $(B) x\nX = a\nF = $(X)\nF = $(F) b\nX = c\nSTART = $(START) && (Owner == \"x\")\n");
    assert_eq!(val(&c, "A"), "1 2 3");
    assert_eq!(val(&c, "B"), " x");
    assert_eq!(val(&c, "F"), "c b");
    assert_eq!(val(&c, "START"), "True && (Owner == \"x\")");
}

#[test]
fn dollar_and_double_dollar() {
    let c = load("A = $(DOLLAR)(X)\nX = 1\nB = $$(X)\nC = $$([X*2])\nD = $(DOLLAR)\n");
    assert_eq!(val(&c, "A"), "$(X)");
    assert_eq!(val(&c, "B"), "$$(X)");
    assert_eq!(val(&c, "C"), "$$([X*2])");
    assert_eq!(val(&c, "D"), "$");
    assert_eq!(get(&c, "DOLLAR"), None);
}

#[test]
fn names_built_from_macros() {
    let c = load("B = 1\nA1 = yes\nC = $(A$(B))\n");
    assert_eq!(val(&c, "C"), "yes");
}

#[test]
fn recursive_definitions_are_reported() {
    let c = load("A = $(B)\nB = $(A)\nC = ok\n");
    assert!(matches!(c.get("A"), Err(ConfigError::Recursion { .. })));
    assert_eq!(val(&c, "C"), "ok");
}

// ---------------------------------------------------------------- environment

#[test]
fn env_function() {
    let files = MemoryFiles::new().with(
        MAIN,
        "A = $ENV(HOME)/sub\nB = $ENV(UNSET)\nC = $ENV(UNSET:dflt)\nD = $env(HOME)\n",
    );
    let c = load_with(files, LoadOptions::new().env_var("HOME", "/home/u")).expect("valid");
    assert_eq!(val(&c, "A"), "/home/u/sub");
    assert_eq!(val(&c, "B"), "UNDEFINED");
    assert_eq!(val(&c, "C"), "dflt");
    assert_eq!(val(&c, "D"), "$env(HOME)");
}

#[test]
fn environment_overrides() {
    let files = MemoryFiles::new().with(MAIN, "FOO = file\nA = file\nB = bval\nSTARTD.S = s\n");
    let opts = LoadOptions::new()
        .env_var("_CONDOR_FOO", "from_env")
        .env_var("_condor_NEW", "env_only")
        .env_var("_CONDOR_A", "$(A) $(B)-env")
        .env_var("_CONDOR_S", "plain")
        .env_var("_SKUA_FOO", "skua");
    let c = load_with(files.clone(), opts.clone()).expect("valid");
    assert_eq!(val(&c, "FOO"), "skua");
    assert_eq!(val(&c, "NEW"), "env_only");
    assert_eq!(val(&c, "A"), "file bval-env");
    assert!(matches!(
        c.knob("A").expect("defined").origin,
        Origin::Environment { .. }
    ));
    let startd = load_with(files, opts.subsystem("STARTD")).expect("valid");
    // A plain override does not beat a subsystem-specific definition.
    assert_eq!(val(&startd, "S"), "s");
}

// ---------------------------------------------------------------- functions

#[test]
fn int_real_eval() {
    let c = load("X = 3\nY = $(X)*2\nA = $INT(X)\nB = $INT(X*2)\nC = $INT(3.7)\nD = $INT(7/2)\nE = $INT(10,%03d)\nF = $REAL(1/3)\nG = $REAL(1.0/4)\nH = $REAL(2.5,%.3f)\nI = $INT(Y)\nJ = $EVAL(1 < 2)\nK = $EVAL(X * 7)\nL = $EVAL(strcat(\"a\",\"b\"))\nM = $EVAL(1.0/3)\n");
    assert_eq!(val(&c, "A"), "3");
    assert_eq!(get(&c, "B"), None);
    assert_eq!(val(&c, "C"), "3");
    assert_eq!(val(&c, "D"), "3");
    assert_eq!(val(&c, "E"), "010");
    assert_eq!(val(&c, "F"), "0");
    assert_eq!(val(&c, "G"), "0.25");
    assert_eq!(val(&c, "H"), "2.500");
    assert_eq!(val(&c, "I"), "6");
    assert_eq!(val(&c, "J"), "true");
    assert_eq!(val(&c, "K"), "undefined");
    assert_eq!(val(&c, "L"), ")");
    assert_eq!(val(&c, "M"), "3.333333333333333E-01");
}

#[test]
fn function_arguments_are_full_classad_expressions() {
    // A knob holding a ClassAd expression is evaluated with the whole ClassAd language (no ad in
    // scope), but the configuration's own rules stay: strings print unquoted, a string is not a
    // number for $INT, text that does not parse expands to nothing.
    let c = load(concat!(
        "S = size(\"abc\")\nA = $EVAL(S)\n",
        "F = formatTime(0, \"%Y\")\nB = $EVAL(F)\n",
        "L = {1, 2+3}\nC = $EVAL(L)\n",
        "U = toUpper(strcat(\"a\", \"b\"))\nD = $EVAL(U)\n",
        "N = \"5\"\nE = $INT(N)\n",
        "G = split(\"a b\")[1]\nH = $EVAL(G)\n",
        "P = 1 +\nI = $EVAL(P)\n",
        "Q = member(2, {1, 2})\nJ = $INT(Q)\n",
    ));
    assert_eq!(val(&c, "A"), "3");
    assert_eq!(val(&c, "B"), "1970");
    assert_eq!(val(&c, "C"), "{ 1,2 + 3 }");
    assert_eq!(val(&c, "D"), "AB");
    assert_eq!(get(&c, "E"), None);
    assert_eq!(val(&c, "H"), "b");
    assert_eq!(get(&c, "I"), None);
    assert_eq!(val(&c, "J"), "1");
}

#[test]
fn choice_and_substr() {
    let c = load("I = 1\nL = red,green,blue\nA = $CHOICE(0,a,b,c)\nB = $CHOICE(I,a,b,c)\nC = $CHOICE(1,L)\nD = $CHOICE(5,a,b)\nS = abcdefgh\nE = $SUBSTR(S,2,3)\nF = $SUBSTR(S,-3)\nG = $SUBSTR(S,1,-2)\n");
    assert_eq!(val(&c, "A"), "a");
    assert_eq!(val(&c, "B"), "b");
    assert_eq!(val(&c, "C"), "green");
    assert_eq!(get(&c, "D"), None);
    assert_eq!(val(&c, "E"), "cde");
    assert_eq!(val(&c, "F"), "fgh");
    assert_eq!(val(&c, "G"), "bcdef");
}

#[test]
fn filename_functions() {
    let c = load("P = /a/b/c/file.tar.gz\nR = rel/dir/name.txt\nA = $Fp(P)\nB = $Fn(P)\nC = $Fx(P)\nD = $Fnx(P)\nE = $Fd(P)\nF = $Fpn(P)\nG = $Fq(P)\nH = $Fa(R)\nI = $Fdb(P)\n");
    for (k, v) in [
        ("A", "/a/b/c/"),
        ("B", "file.tar"),
        ("C", ".gz"),
        ("D", "file.tar.gz"),
        ("E", "c/"),
        ("F", "/a/b/c/file.tar"),
        ("G", "\"/a/b/c/file.tar.gz\""),
        ("H", "rel/dir/name.txt"),
        ("I", "c"),
    ] {
        assert_eq!(val(&c, k), v, "{k}");
    }
}

// ---------------------------------------------------------------- include

#[test]
fn includes_in_order_with_macros_and_nesting() {
    let files = MemoryFiles::new()
        .with(
            MAIN,
            "A = main\nD = /etc/skua\ninclude : $(D)/inc1\nC = main\ninclude ifexist : /nope\n",
        )
        .with(
            "/etc/skua/inc1",
            "A = inc\nB = inc\nC = inc\n@include : /etc/skua/inc2\n",
        )
        .with("/etc/skua/inc2", "E = nested\n");
    let c = load_with(files, LoadOptions::new()).expect("valid");
    assert_eq!(val(&c, "A"), "inc");
    assert_eq!(val(&c, "B"), "inc");
    assert_eq!(val(&c, "C"), "main");
    assert_eq!(val(&c, "E"), "nested");
    match c.knob("E").expect("defined").origin {
        Origin::File(at) => assert_eq!((at.file.as_str(), at.line), ("/etc/skua/inc2", 1)),
        other => panic!("unexpected origin {other:?}"),
    }
}

#[test]
fn missing_include_is_an_error() {
    let e = load_err("A = 1\ninclude : /nope\n");
    assert!(
        matches!(&e, ConfigError::IncludeNotFound { path, .. } if path == "/nope"),
        "{e}"
    );
    assert_eq!(
        e.location().map(|l| (l.file.as_str(), l.line)),
        Some((MAIN, 2))
    );
}

#[test]
fn include_cycle_is_an_error() {
    let files = MemoryFiles::new()
        .with(MAIN, "include : /etc/a\n")
        .with("/etc/a", "include : /etc/b\n")
        .with("/etc/b", "include : /etc/a\n");
    let e = load_with(files, LoadOptions::new()).expect_err("cycle");
    assert!(matches!(e, ConfigError::IncludeTooDeep { .. }), "{e}");
}

#[test]
fn include_keywords_are_checked() {
    let e = load_err("include IFEXIST : /x\n");
    assert!(matches!(e, ConfigError::IncludeKeyword { .. }), "{e}");
    let e = load_err("include : /bin/cmd |\n");
    assert!(matches!(e, ConfigError::IncludeCommand { .. }), "{e}");
}

// ---------------------------------------------------------------- conditionals

#[test]
fn if_defined_else_and_nesting() {
    let c = load("X = 1\nif defined X\n if defined Y\n  A = xy\n else\n  A = x_only\n endif\n B = outer\nelse\n if true\n  C = never\n endif\nendif\nIF DEFINED NOPE\nD = 1\nELIF !defined NOPE\nD = 2\nENDIF\n");
    assert_eq!(val(&c, "A"), "x_only");
    assert_eq!(val(&c, "B"), "outer");
    assert_eq!(get(&c, "C"), None);
    assert_eq!(val(&c, "D"), "2");
}

#[test]
fn if_literals_macros_and_versions() {
    let c = load("FLAG = true\nOFF = 0\nif $(FLAG)\nA = on\nendif\nif $(OFF)\nB = on\nelse\nB = off\nendif\nif version >= 8.0\nV = new\nendif\nif version > 99.0.0\nW = future\nendif\nif yes\nY = 1\nendif\nif defined START\nS = default_counts\nendif\nif defined LATER\nL = 1\nendif\nLATER = 1\n");
    assert_eq!(val(&c, "A"), "on");
    assert_eq!(val(&c, "B"), "off");
    assert_eq!(val(&c, "V"), "new");
    assert_eq!(get(&c, "W"), None);
    assert_eq!(val(&c, "Y"), "1");
    assert_eq!(val(&c, "S"), "default_counts");
    assert_eq!(get(&c, "L"), None);
}

#[test]
fn conditional_errors() {
    for (text, line) in [
        ("A = 1\nif\nB = 2\nendif\n", 2),
        ("A = 1\nif $(A) == 1\nendif\n", 2),
        ("if version >= 26\nendif\n", 1),
        ("if on\nendif\n", 1),
    ] {
        let e = load_err(text);
        assert!(matches!(e, ConfigError::BadCondition { .. }), "{text}: {e}");
        assert_eq!(line_of(&e), line, "{text}");
    }
    assert!(matches!(
        load_err("A = 1\nelse\n"),
        ConfigError::UnmatchedConditional { .. }
    ));
    assert!(matches!(
        load_err("endif\n"),
        ConfigError::UnmatchedConditional { .. }
    ));
    assert!(matches!(
        load_err("if true\nelse\nelse\nendif\n"),
        ConfigError::AfterElse { .. }
    ));
    assert!(matches!(
        load_err("if true\nelse\nelif true\nendif\n"),
        ConfigError::AfterElse { .. }
    ));
    assert!(matches!(
        load_err("if true\nA = 1\n"),
        ConfigError::MissingEndif { .. }
    ));
}

#[test]
fn error_and_warning_statements() {
    let e = load_err("X = 1\nif defined X\nerror : X must not be set\nendif\n");
    assert!(
        matches!(&e, ConfigError::ErrorStatement { message, .. } if message == "X must not be set"),
        "{e}"
    );
    assert_eq!(line_of(&e), 3);
    let c = load("if defined NOPE\nerror : ignored in a false branch\nendif\nwarning : just a warning\nA = ok\n");
    assert_eq!(val(&c, "A"), "ok");
    assert!(c.warnings().iter().any(|w| w.message == "just a warning"));
}

#[test]
fn garbage_lines_are_errors_naming_file_and_line() {
    let e = load_err("A = 1\nthis is not valid\n");
    assert!(matches!(e, ConfigError::Unparseable { .. }), "{e}");
    assert_eq!(
        e.location().map(|l| (l.file.as_str(), l.line)),
        Some((MAIN, 2))
    );
    assert!(
        e.to_string().contains("/etc/skua/skua_config, line 2"),
        "{e}"
    );
    let e = load_err("A-B = 1\n");
    assert!(
        matches!(&e, ConfigError::IllegalName { name, .. } if name == "A-B"),
        "{e}"
    );
}

// ---------------------------------------------------------------- subsystems and local names

#[test]
fn subsystem_and_local_name_precedence() {
    let text = "FOO = global\nSTARTD.FOO = startd\nschedd.foo = schedd_lower\nX.FOO = local_x\nBAR = <$(FOO)>\nZ = $(SUBSYSTEM)/$(LOCALNAME)\n";
    let files = MemoryFiles::new().with(MAIN, text);
    let tool = load_with(files.clone(), LoadOptions::new()).expect("valid");
    assert_eq!(val(&tool, "FOO"), "global");
    assert_eq!(val(&tool, "STARTD.FOO"), "startd");
    assert_eq!(val(&tool, "Z"), "TOOL/TOOL");
    let startd = load_with(files.clone(), LoadOptions::new().subsystem("STARTD")).expect("valid");
    assert_eq!(val(&startd, "FOO"), "startd");
    assert_eq!(val(&startd, "BAR"), "<startd>");
    let schedd = load_with(files.clone(), LoadOptions::new().subsystem("SCHEDD")).expect("valid");
    assert_eq!(val(&schedd, "FOO"), "schedd_lower");
    let local = load_with(
        files,
        LoadOptions::new().subsystem("STARTD").local_name("X"),
    )
    .expect("valid");
    assert_eq!(val(&local, "FOO"), "local_x");
    assert_eq!(val(&local, "Z"), "STARTD/X");
}

#[test]
fn subsystem_known_while_reading() {
    let files = MemoryFiles::new().with(
        MAIN,
        "STARTD.FOO = 1\nif defined FOO\nR = yes\nelse\nR = no\nendif\n",
    );
    let startd = load_with(files.clone(), LoadOptions::new().subsystem("STARTD")).expect("valid");
    assert_eq!(val(&startd, "R"), "yes");
    let tool = load_with(files, LoadOptions::new()).expect("valid");
    assert_eq!(val(&tool, "R"), "no");
}

// ---------------------------------------------------------------- local configuration

#[test]
fn local_config_dir_then_file() {
    let files = MemoryFiles::new()
        .with(
            MAIN,
            "LOCAL_CONFIG_FILE = /etc/lf\nLOCAL_CONFIG_DIR = /etc/ld\nA = main\n",
        )
        .with("/etc/lf", "A = file\nSEQ = $(SEQ) file\n")
        .with("/etc/ld/20-b", "SEQ = $(SEQ) 20\n")
        .with("/etc/ld/10-a", "SEQ = $(SEQ) 10\n")
        .with("/etc/ld/15.rpmsave", "SEQ = $(SEQ) skipped\n")
        .with("/etc/ld/.hidden", "SEQ = $(SEQ) skipped\n");
    let c = load_with(files, LoadOptions::new()).expect("valid");
    assert_eq!(val(&c, "A"), "file");
    assert_eq!(c.knob("SEQ").expect("defined").raw, " 10 20 file");
}

#[test]
fn local_config_file_chains_and_requirements() {
    let files = MemoryFiles::new()
        .with(MAIN, "LOCAL_CONFIG_FILE = /etc/l1\n")
        .with("/etc/l1", "LOCAL_CONFIG_FILE = /etc/l2\nA = 1\n")
        .with("/etc/l2", "A = 2\n");
    assert_eq!(
        val(&load_with(files, LoadOptions::new()).expect("valid"), "A"),
        "2"
    );

    let e = load_err("LOCAL_CONFIG_FILE = /nope\n");
    assert!(matches!(e, ConfigError::LocalUnreadable { .. }), "{e}");
    let c = load("LOCAL_CONFIG_FILE = /nope\nREQUIRE_LOCAL_CONFIG_FILE = false\nA = 1\n");
    assert_eq!(val(&c, "A"), "1");
}

// ---------------------------------------------------------------- metaknobs

#[test]
fn metaknobs_expand_inline() {
    let c = load("use ROLE : Personal\nDAEMON_LIST = $(DAEMON_LIST) FOO\n");
    assert_eq!(
        val(&c, "DAEMON_LIST"),
        "MASTER COLLECTOR NEGOTIATOR STARTD SCHEDD FOO"
    );
    assert_eq!(val(&c, "CONDOR_HOST"), "127.0.0.1");
    let c = load("use role : Submit, Execute\n");
    assert_eq!(val(&c, "DAEMON_LIST"), "MASTER SCHEDD STARTD");
    let c = load("START = before\nuse POLICY : Always_Run_Jobs\nSUSPEND = after\n");
    assert_eq!(val(&c, "START"), "True");
    assert_eq!(val(&c, "SUSPEND"), "after");
    assert_eq!(val(&c, "MaxJobRetirementTime"), "2147483647");
}

#[test]
fn metaknob_arguments() {
    let c = load("use FEATURE : PartitionableSlot\nuse FEATURE : PartitionableSlot(2, cpus=50%, mem=50%)\nuse POLICY : Limit_Job_Runtimes(3600)\n");
    assert_eq!(val(&c, "NUM_SLOTS_TYPE_1"), "1");
    assert_eq!(val(&c, "SLOT_TYPE_1"), "100%");
    assert_eq!(val(&c, "SLOT_TYPE_1_PARTITIONABLE"), "true");
    assert_eq!(val(&c, "SLOT_TYPE_2"), "cpus=50%, mem=50%");
    assert_eq!(
        val(&c, "PREEMPT"),
        "(Activity == \"Busy\") && ((time() - EnteredCurrentActivity) > 3600)"
    );
    match c.knob("SLOT_TYPE_2").expect("defined").origin {
        Origin::File(at) => {
            assert_eq!(at.line, 2);
            assert!(at
                .within
                .as_deref()
                .is_some_and(|w| w.contains("PartitionableSlot")));
        }
        other => panic!("unexpected origin {other:?}"),
    }
}

#[test]
fn metaknob_errors() {
    let e = load_err("use ROLE : Nope\n");
    assert!(matches!(e, ConfigError::UnknownMetaknob { .. }), "{e}");
    let e = load_err("use NOPE : x\n");
    assert!(
        matches!(e, ConfigError::UnknownMetaknobCategory { .. }),
        "{e}"
    );
    let e = load_err("use : x\n");
    assert!(matches!(e, ConfigError::BadUse { .. }), "{e}");
    // An `error :` inside a template (missing argument) refuses the configuration.
    let e = load_err("use POLICY : PREEMPT_IF\n");
    assert!(matches!(e, ConfigError::ErrorStatement { .. }), "{e}");
}

// ---------------------------------------------------------------- defaults

#[test]
fn built_in_defaults() {
    let c = load("");
    for (k, v) in [
        ("START", "True"),
        ("SUSPEND", "False"),
        ("PRIORITY_HALFLIFE", "86400"),
        ("Negotiator_Interval", "60"),
        ("MachineMaxVacateTime", "10 * 60"),
        ("DAEMON_LIST", "MASTER"),
    ] {
        assert_eq!(val(&c, k), v, "{k}");
    }
    assert_eq!(get(&c, "MaxJobRetirementTime"), None);
    assert_eq!(get(&c, "CLASSAD_LIFETIME"), None);
    assert_eq!(c.knob("START").expect("default").origin, Origin::Default);
    let c = load("MINUTE = 30\n");
    assert_eq!(val(&c, "MachineMaxVacateTime"), "10 * 30");
}

#[test]
fn no_main_file_means_defaults_and_environment() {
    let c = Config::load(
        &MemoryFiles::new(),
        &LoadOptions::new().env_var("_CONDOR_A", "1"),
    )
    .expect("valid");
    assert_eq!(val(&c, "START"), "True");
    assert_eq!(val(&c, "A"), "1");
    let e = Config::load(
        &MemoryFiles::new(),
        &LoadOptions::new().main_file("/missing"),
    )
    .expect_err("unreadable main file");
    assert!(matches!(e, ConfigError::Unreadable { .. }), "{e}");
}
