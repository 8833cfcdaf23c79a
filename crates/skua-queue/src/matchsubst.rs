//! `$$()` match-time substitution, as HTCondor's schedd does it when a job
//! starts on a slot.
//!
//! The job ad in the queue keeps its `$$(...)` text; the copy sent to the
//! execute side has every such attribute expanded with values of the
//! matched machine ad:
//!
//! - `$$(Attr)`: the machine's `Attr` (a string without its quotes, any
//!   other value as ClassAd text); a name with a `.` (`TARGET.Attr`) is an
//!   error, as in HTCondor;
//! - `$$(Attr:default)`: `default` (as text) when the machine has no `Attr`;
//! - `$$([expr])`: `string(expr)` evaluated with MY = the job and TARGET =
//!   the machine;
//! - `$$(DOLLARDOLLAR)`: a literal `$$`;
//! - `$$(CondorScratchDir)` in `Environment`/`Env` is left for the starter
//!   (the job's scratch directory).
//!
//! Attributes whose names start with `MATCH_` are never expanded. The
//! queue's ad records `MATCH_<Attr>` (the machine's expression looked up)
//! and `MATCH_EXP_<JobAttr>` (the expanded value), and, with a
//! `LastMatchListLength` of N, the machine's `Name` as `LastMatchName0`
//! (older ones shifted to `LastMatchName1` ... `LastMatchName<N-1>`).
//! Without a machine ad (a run found again after a schedd restart) the
//! recorded values are used instead. An unresolvable `$$()` (no such
//! attribute and no default, an expression that is not a string) holds the
//! job with HTCondor's reason, `Cannot expand $$ expression (<name>).`.
//!
//! The replacement is textual, in the attribute's unparsed expression, and
//! the text inserted is never scanned again (a machine value holding
//! `$$(` stays as it is). Every `$$(` of a job ad is inside a string
//! literal (the ClassAd grammar has no `$` elsewhere), so the inserted text
//! is escaped as a string literal's contents.

use classad::{ClassAd, Expr, Value};

use crate::plan::{evaluator, Planner};
use crate::{JobId, Queue, QueueError, Txn};

/// The submit command `match_list_length`'s attribute.
pub const LAST_MATCH_LIST_LENGTH: &str = "LastMatchListLength";
/// The prefix of the rotated machine names (`LastMatchName0` the latest).
pub const LAST_MATCH_NAME: &str = "LastMatchName";

/// A `$$()` that cannot be expanded: the job is held.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("Cannot expand $$ expression ({name}).")]
pub struct Unexpandable {
    /// The text between `$$(` and `)` (HTCondor's reason names it so), or
    /// the attribute whose expanded text does not parse.
    pub name: String,
}

impl Unexpandable {
    /// HTCondor's `HoldReason`.
    pub fn hold_reason(&self) -> String {
        self.to_string()
    }
}

/// HTCondor's `HoldReasonCode` for an unexpandable `$$()`: 0, Unspecified.
pub const HOLD_CODE: i64 = 0;

/// What a match expands.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MatchExpansion {
    /// The job attributes replaced in the copy sent to the execute side.
    pub expanded: Vec<(String, Expr)>,
    /// The attributes recorded in the queue's job ad: `MATCH_<Attr>`,
    /// `MATCH_EXP_<Attr>`, `LastMatchName<i>`.
    pub record: Vec<(String, Expr)>,
}

impl MatchExpansion {
    /// `ad` with the expanded attributes in place of their `$$()` text.
    pub fn apply_to(&self, ad: &mut ClassAd) {
        for (name, e) in &self.expanded {
            ad.insert(name.as_str(), e.clone());
        }
    }
}

/// Expands the `$$()` references of `job` with `machine`, the matched slot
/// ad (`None`: the values recorded at the match, in the job's `MATCH_*`
/// attributes). `now` is the evaluation clock of `$$([expr])`.
pub fn expand_match(
    job: &ClassAd,
    machine: Option<&ClassAd>,
    now: i64,
) -> Result<MatchExpansion, Unexpandable> {
    let mut x = Expander {
        job,
        machine,
        ev: evaluator(now),
        out: MatchExpansion::default(),
    };
    let attrs: Vec<(String, Expr)> = job
        .iter_chained()
        .map(|(n, e)| (n.as_str().to_string(), e.clone()))
        .collect();
    for (name, expr) in attrs {
        if starts_with_ignore_case(&name, "MATCH_") {
            continue;
        }
        if !mentions_dollar_dollar(&expr) {
            continue;
        }
        let text = classad::unparse(&expr);
        if machine.is_none() {
            if let Some(e) = job.lookup(&format!("MATCH_EXP_{name}")) {
                x.out.expanded.push((name, e.clone()));
                continue;
            }
        }
        let env = name.eq_ignore_ascii_case("Environment") || name.eq_ignore_ascii_case("Env");
        let done = x.expand_text(&text, env)?;
        let e = classad::parse_expr(&done).map_err(|_| Unexpandable { name: name.clone() })?;
        x.out.record.push((format!("MATCH_EXP_{name}"), e.clone()));
        x.out.expanded.push((name, e));
    }
    if let Some(m) = machine {
        x.rotate_names(m);
    }
    Ok(x.out)
}

struct Expander<'a> {
    job: &'a ClassAd,
    machine: Option<&'a ClassAd>,
    ev: classad::Evaluator,
    out: MatchExpansion,
}

impl Expander<'_> {
    /// `text` (an unparsed expression) with each `$$()` replaced; the
    /// replacements are not scanned again.
    fn expand_text(&mut self, text: &str, env: bool) -> Result<String, Unexpandable> {
        let mut done = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find("$$(") {
            done.push_str(&rest[..at]);
            let after = &rest[at + 3..];
            let (len, with) = match self.reference(after, env)? {
                Some(r) => r,
                // not a reference: the text stays
                None => (0, "$$(".to_string()),
            };
            done.push_str(&with);
            rest = &after[len..];
        }
        done.push_str(rest);
        Ok(done)
    }

    /// The reference starting at `after` (the text after `$$(`): how many
    /// bytes it takes (through its closing parenthesis) and the text that
    /// replaces it, or `None` if it is not one.
    fn reference(
        &mut self,
        after: &str,
        env: bool,
    ) -> Result<Option<(usize, String)>, Unexpandable> {
        if let Some(inner) = after.strip_prefix('[') {
            let Some(end) = inner.find("])") else {
                return Ok(None);
            };
            let source = unescape(&inner[..end]);
            let value = self.expression(&source).ok_or_else(|| Unexpandable {
                name: format!("[{source}]"),
            })?;
            return Ok(Some((end + 3, escape(&value))));
        }
        let Some(end) = after.find(')') else {
            return Ok(None);
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(':') {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        let is_name = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
        if !is_name {
            return Ok(None);
        }
        let taken = end + 1;
        if default.is_none() && name.eq_ignore_ascii_case("DOLLARDOLLAR") {
            return Ok(Some((taken, "$$".to_string())));
        }
        if default.is_none() && env && name.eq_ignore_ascii_case("CondorScratchDir") {
            return Ok(Some((taken, format!("$$({name})"))));
        }
        let fail = || Unexpandable {
            name: inner.to_string(),
        };
        if name.contains('.') {
            return Err(fail());
        }
        let found = match self.machine {
            Some(m) => m.lookup(name).map(|e| {
                self.out.record.push((format!("MATCH_{name}"), e.clone()));
                (e.clone(), m)
            }),
            None => self
                .job
                .lookup(&format!("MATCH_{name}"))
                .map(|e| (e.clone(), self.job)),
        };
        let text = match (found, default) {
            (Some((e, scope)), _) => self.machine_text(name, &e, scope),
            (None, Some(d)) => d.to_string(),
            (None, None) => return Err(fail()),
        };
        Ok(Some((taken, escape(&text))))
    }

    /// A machine attribute's value as text: a string without its quotes,
    /// anything else as ClassAd text (an expression evaluated in the
    /// machine ad against the job first).
    fn machine_text(&mut self, name: &str, e: &Expr, scope: &ClassAd) -> String {
        if let Expr::Lit(v) = e {
            return literal_text(v);
        }
        let target = if std::ptr::eq(scope, self.job) {
            None
        } else {
            Some(self.job)
        };
        let attr = if target.is_none() {
            format!("MATCH_{name}")
        } else {
            name.to_string()
        };
        match self.ev.eval_attr(&attr, scope, target) {
            Value::Undefined | Value::Error => classad::unparse(e),
            v => literal_text(&v),
        }
    }

    /// `string(source)` with MY = the job and TARGET = the machine: its
    /// text, or `None` if it does not parse or is not a string.
    fn expression(&mut self, source: &str) -> Option<String> {
        let e = classad::parse_expr(&format!("string({source})")).ok()?;
        match self.ev.eval(&e, Some(self.job), self.machine) {
            Value::Str(s) => Some(String::from_utf8_lossy(&s).into_owned()),
            _ => None,
        }
    }

    /// `LastMatchName0` = the machine's `Name`, the older names shifted up
    /// to `LastMatchListLength` of them.
    fn rotate_names(&mut self, machine: &ClassAd) {
        let len = match self.job.lookup(LAST_MATCH_LIST_LENGTH) {
            Some(Expr::Lit(v)) => v.as_int().unwrap_or(0),
            _ => 0,
        };
        if len <= 0 {
            return;
        }
        let Some(name) = machine.lookup("Name").and_then(|e| match e {
            Expr::Lit(v) => v.as_string(),
            _ => None,
        }) else {
            return;
        };
        // the names recorded so far (consecutive from 0)
        let mut kept = Vec::new();
        while let Some(e) = self.job.lookup(&format!("{LAST_MATCH_NAME}{}", kept.len())) {
            kept.push(e.clone());
            if kept.len() as i64 >= len - 1 {
                break;
            }
        }
        for (i, e) in kept.into_iter().enumerate() {
            self.out
                .record
                .push((format!("{LAST_MATCH_NAME}{}", i + 1), e));
        }
        self.out
            .record
            .push((format!("{LAST_MATCH_NAME}0"), Expr::string(&name)));
    }
}

/// Whether a string literal of `e` holds `$$(` (the only place the
/// ClassAd grammar lets it be): the cheap test before the text is made.
fn mentions_dollar_dollar(e: &Expr) -> bool {
    match e {
        Expr::Lit(Value::Str(s)) => s.windows(3).any(|w| w == b"$$("),
        Expr::Lit(Value::List(l)) | Expr::List(l) => l.iter().any(mentions_dollar_dollar),
        Expr::Lit(Value::Ad(a)) | Expr::Ad(a) => {
            a.iter_chained().any(|(_, e)| mentions_dollar_dollar(e))
        }
        Expr::Lit(_) | Expr::RelTimeStr(_) | Expr::Attr(_) | Expr::AbsAttr(_) => false,
        Expr::Select(e, _) | Expr::Unary(_, e) | Expr::Paren(e) => mentions_dollar_dollar(e),
        Expr::Index(a, b) | Expr::Binary(_, a, b) | Expr::Elvis(a, b) => {
            mentions_dollar_dollar(a) || mentions_dollar_dollar(b)
        }
        Expr::Cond(c) => {
            mentions_dollar_dollar(&c.0)
                || mentions_dollar_dollar(&c.1)
                || mentions_dollar_dollar(&c.2)
        }
        Expr::Call(c) => c.args.iter().any(mentions_dollar_dollar),
    }
}

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len() && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

/// A value as text: a string's contents, anything else as ClassAd text.
fn literal_text(v: &Value) -> String {
    match v {
        Value::Str(s) => String::from_utf8_lossy(s).into_owned(),
        v => classad::unparse_value(v),
    }
}

/// `text` as the contents of a ClassAd string literal (quotes, backslashes
/// and control characters escaped), for insertion inside one.
fn escape(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    classad::quote_string(text.as_bytes(), b'"', &mut quoted);
    quoted[1..quoted.len() - 1].to_string()
}

/// The contents of a string literal as written (`\"`, `\\` and the other
/// escapes), unescaped; text that is not a valid literal's contents is
/// returned as it is.
fn unescape(text: &str) -> String {
    match classad::parse_expr(&format!("\"{text}\"")) {
        Ok(Expr::Lit(Value::Str(s))) => String::from_utf8_lossy(&s).into_owned(),
        _ => text.to_string(),
    }
}

impl Queue {
    /// Records a match's expansion in the queue's job ad (the `MATCH_*`
    /// and `LastMatchName*` attributes).
    pub fn plan_match_record(&self, id: JobId, m: &MatchExpansion) -> Result<Txn, QueueError> {
        self.job_ad(id)?;
        let mut p = Planner::new(self);
        for (name, e) in &m.record {
            p.set(id, name, e);
        }
        Ok(p.finish())
    }

    /// Holds an idle job whose `$$()` cannot be expanded on the slot it
    /// matched (HoldReasonCode 0, subcode 0, as HTCondor).
    pub fn plan_match_hold(
        &self,
        id: JobId,
        e: &Unexpandable,
        now: i64,
    ) -> Result<Txn, QueueError> {
        let ad = self.job_ad(id)?;
        let mut p = Planner::new(self);
        p.hold(id, ad, HOLD_CODE, 0, &e.hold_reason(), now);
        Ok(p.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ad(text: &str) -> ClassAd {
        classad::parse_old_ad(text).unwrap()
    }

    fn machine() -> ClassAd {
        ad(
            "Name = \"slot1@exec1\"\nOpSys = \"LINUX\"\nMemory = 1024\nCpus = 4\n\
            Weird = \"say \\\"hi\\\" $$(Name)\"\nDoubled = Cpus * 2\n",
        )
    }

    fn expanded(job: &ClassAd, m: Option<&ClassAd>) -> ClassAd {
        let x = expand_match(job, m, 1_700_000_000).unwrap();
        let mut out = job.clone();
        x.apply_to(&mut out);
        out
    }

    fn string(ad: &ClassAd, name: &str) -> String {
        match ad.lookup(name) {
            Some(Expr::Lit(v)) => v.as_string().unwrap(),
            other => panic!("{name} is {other:?}"),
        }
    }

    fn record(x: &MatchExpansion, name: &str) -> Option<String> {
        x.record
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, e)| classad::unparse(e))
    }

    #[test]
    fn attributes_come_from_the_machine_and_are_recorded() {
        let job =
            ad("Args = \"$$(Name) $$(OpSys)\"\nCmd = \"/bin/$$(opsys)/run\"\nOwner = \"u\"\n");
        let m = machine();
        let x = expand_match(&job, Some(&m), 0).unwrap();
        let mut out = job.clone();
        x.apply_to(&mut out);
        assert_eq!(string(&out, "Args"), "slot1@exec1 LINUX");
        assert_eq!(string(&out, "Cmd"), "/bin/LINUX/run");
        assert_eq!(string(&out, "Owner"), "u");
        assert_eq!(record(&x, "MATCH_Name").as_deref(), Some("\"slot1@exec1\""));
        assert_eq!(record(&x, "MATCH_opsys").as_deref(), Some("\"LINUX\""));
        assert_eq!(
            record(&x, "MATCH_EXP_Args").as_deref(),
            Some("\"slot1@exec1 LINUX\"")
        );
        // an attribute without `$$(` is neither sent changed nor recorded
        assert!(record(&x, "MATCH_EXP_Owner").is_none());
        assert!(!x.expanded.iter().any(|(n, _)| n == "Owner"));
    }

    #[test]
    fn numbers_and_expressions_of_the_machine_are_their_text_or_value() {
        let job = ad("Environment = \"X=$$(Memory) Y=$$(Doubled)\"\n");
        assert_eq!(
            string(&expanded(&job, Some(&machine())), "Environment"),
            "X=1024 Y=8"
        );
    }

    #[test]
    fn a_default_is_used_only_when_the_machine_lacks_the_attribute() {
        let job = ad("Environment = \"A=$$(Memory:0) B=$$(NoSuch:none here)\"\n");
        let x = expand_match(&job, Some(&machine()), 0).unwrap();
        let mut out = job.clone();
        x.apply_to(&mut out);
        assert_eq!(string(&out, "Environment"), "A=1024 B=none here");
        assert!(record(&x, "MATCH_NoSuch").is_none());
    }

    #[test]
    fn an_expression_is_evaluated_with_the_job_as_my_and_the_machine_as_target() {
        let job = ad(
            "RequestCpus = 3\nArgs = \"n=$$([TARGET.Cpus - MY.RequestCpus]) s=$$([strcat(\\\"a)\\\", OpSys)])\"\n",
        );
        assert_eq!(
            string(&expanded(&job, Some(&machine())), "Args"),
            "n=1 s=a)LINUX"
        );
    }

    #[test]
    fn what_cannot_be_expanded_names_the_reference() {
        let m = machine();
        for (text, name) in [
            ("A = \"x $$(NoSuchAttr) y\"", "NoSuchAttr"),
            ("A = \"$$(TARGET.Memory)\"", "TARGET.Memory"),
            ("A = \"$$([NoSuch + 1])\"", "[NoSuch + 1]"),
            ("A = \"$$([1 +])\"", "[1 +]"),
        ] {
            let err = expand_match(&ad(text), Some(&m), 0).unwrap_err();
            assert_eq!(err.name, name, "{text}");
            assert_eq!(
                err.hold_reason(),
                format!("Cannot expand $$ expression ({name}).")
            );
        }
    }

    #[test]
    fn dollardollar_is_a_literal_and_inserted_text_is_not_scanned_again() {
        let job = ad("Args = \"cost $$(DOLLARDOLLAR)5 $$(Weird)\"\n");
        let out = expanded(&job, Some(&machine()));
        // the machine's string with quotes and `$$(` inside stays as is
        assert_eq!(string(&out, "Args"), "cost $$5 say \"hi\" $$(Name)");
    }

    #[test]
    fn text_that_is_not_a_reference_stays() {
        let job = ad("A = \"$$(not a name) and $$(open\"\n");
        assert_eq!(
            string(&expanded(&job, Some(&machine())), "A"),
            "$$(not a name) and $$(open"
        );
    }

    #[test]
    fn references_inside_expressions_and_nested_strings_are_expanded() {
        let job = ad(
            "Foo = strcat(\"a\", \"$$(Name)\")\nBar = [ x = \"$$(Memory)\" ]\n\
                      Baz = { 1, \"$$(OpSys)\" }\nQux = Cpus > 1 ? \"$$(Cpus)\" : \"none\"\n",
        );
        let x = expand_match(&job, Some(&machine()), 0).unwrap();
        assert_eq!(
            record(&x, "MATCH_EXP_Foo").as_deref(),
            Some("strcat(\"a\",\"slot1@exec1\")")
        );
        assert_eq!(
            record(&x, "MATCH_EXP_Bar").as_deref(),
            Some("[ x = \"1024\" ]")
        );
        assert_eq!(
            record(&x, "MATCH_EXP_Baz").as_deref(),
            Some("{ 1,\"LINUX\" }")
        );
        assert_eq!(
            record(&x, "MATCH_EXP_Qux").as_deref(),
            Some("Cpus > 1 ? \"4\" : \"none\"")
        );
    }

    #[test]
    fn match_attributes_are_never_expanded() {
        let job = ad("MATCH_EXP_Note = \"$$(Name)\"\nmatch_x = \"$$(NoSuch)\"\n");
        let x = expand_match(&job, Some(&machine()), 0).unwrap();
        assert!(x.expanded.is_empty());
        assert!(x.record.is_empty());
    }

    #[test]
    fn scratch_dir_in_the_environment_is_left_for_the_starter() {
        let job =
            ad("Environment = \"D=$$(CondorScratchDir)/x\"\nArgs = \"$$(CondorScratchDir)\"\n");
        let m = machine();
        let mut only_env = job.clone();
        only_env.remove("Args");
        assert_eq!(
            string(&expanded(&only_env, Some(&m)), "Environment"),
            "D=$$(CondorScratchDir)/x"
        );
        // elsewhere it is a machine attribute like any other
        assert_eq!(
            expand_match(&job, Some(&m), 0).unwrap_err().name,
            "CondorScratchDir"
        );
    }

    #[test]
    fn without_a_machine_the_recorded_values_are_used() {
        let m = machine();
        let job = ad("Args = \"$$(Name)\"\nEnvironment = \"M=$$(Memory)\"\n");
        let first = expand_match(&job, Some(&m), 0).unwrap();
        let mut queued = job.clone();
        for (n, e) in &first.record {
            queued.insert(n.as_str(), e.clone());
        }
        // the expanded value recorded wins
        let mut again = queued.clone();
        again.insert("MATCH_EXP_Args", Expr::string("recorded"));
        let out = expanded(&again, None);
        assert_eq!(string(&out, "Args"), "recorded");
        // without it, MATCH_<attr> stands for the machine's attribute
        assert_eq!(string(&out, "Environment"), "M=1024");
        // with neither, the job cannot run
        assert_eq!(expand_match(&job, None, 0).unwrap_err().name, "Name");
    }

    #[test]
    fn last_match_names_rotate_up_to_the_list_length() {
        let m = machine();
        let job = ad("LastMatchListLength = 3\nLastMatchName0 = \"b\"\nLastMatchName1 = \"a\"\nLastMatchName2 = \"old\"\n");
        let x = expand_match(&job, Some(&m), 0).unwrap();
        assert_eq!(
            record(&x, "LastMatchName0").as_deref(),
            Some("\"slot1@exec1\"")
        );
        assert_eq!(record(&x, "LastMatchName1").as_deref(), Some("\"b\""));
        assert_eq!(record(&x, "LastMatchName2").as_deref(), Some("\"a\""));
        assert!(record(&x, "LastMatchName3").is_none());
        // a first match, and no list without a length
        let first = expand_match(&ad("LastMatchListLength = 1\n"), Some(&m), 0).unwrap();
        assert_eq!(first.record.len(), 1);
        assert!(expand_match(&ad("A = 1\n"), Some(&m), 0)
            .unwrap()
            .record
            .is_empty());
    }
}
