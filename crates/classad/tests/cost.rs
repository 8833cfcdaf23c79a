//! The cost of evaluation: attribute values are remembered within one
//! evaluation (ads whose attributes refer to each other many times cost
//! linear time, not exponential), every evaluation has a work budget whose
//! exhaustion makes it ERROR, and remembering never changes a result.

#![allow(clippy::unwrap_used)]

use classad::{parse_ad, parse_expr, rank, symmetric_match, ClassAd, Evaluator, Value};

fn ad(text: &str) -> ClassAd {
    parse_ad(text).unwrap_or_else(|e| panic!("test ad does not parse: {e}\n{text}"))
}

/// `a0 = a1 + a1; a1 = a2 + a2; ...; a<n> = 1`: 2^n additions unless
/// values are remembered.
fn doubling_chain(n: usize, prefix: &str, leaf: &str) -> String {
    let mut s = String::from("[");
    for i in 0..n {
        s.push_str(&format!(
            "{prefix}{i} = {prefix}{j} + {prefix}{j}; ",
            j = i + 1
        ));
    }
    s.push_str(&format!("{prefix}{n} = {leaf}]"));
    s
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        _ => None,
    }
}

#[test]
fn an_exponential_chain_evaluates_to_the_right_number() {
    let chain = ad(&doubling_chain(40, "a", "1"));
    let mut ev = Evaluator::default();
    let v = ev.eval_attr("a0", &chain, None);
    assert_eq!(int(&v), Some(1 << 40), "{v:?}");
    assert!(!ev.budget_exhausted());
    // a few steps per level, not 2^40
    assert!(ev.steps_taken() < 1000, "{} steps", ev.steps_taken());
    let e = parse_expr("a0 - a1 + a2").unwrap();
    assert_eq!(
        int(&ev.eval(&e, Some(&chain), None)),
        Some((1i64 << 40) - (1 << 39) + (1 << 38))
    );
}

#[test]
fn an_exponential_chain_on_either_side_of_a_match_is_fast_and_right() {
    // The machine holds the chain; the job's requirements and rank use it
    // through TARGET, and the machine's own requirements through MY.
    let mut machine_text = doubling_chain(50, "a", "1");
    machine_text.pop();
    machine_text.push_str("; Requirements = MY.a0 > 0 && TARGET.b0 > 0]");
    let machine = ad(&machine_text);
    let mut job_text = doubling_chain(50, "b", "2");
    job_text.pop();
    job_text
        .push_str("; Requirements = TARGET.a0 == 1125899906842624 && b0 > 0; Rank = TARGET.a1]");
    let job = ad(&job_text);
    let mut ev = Evaluator::default();
    let m = symmetric_match(&mut ev, &job, &machine);
    assert!(m.job_requirements_ok && m.machine_requirements_ok);
    assert_eq!(int(&rank(&mut ev, &job, &machine)), Some(1 << 49));
}

#[test]
fn a_blow_up_that_remembering_cannot_help_runs_out_of_budget_and_is_error() {
    let mut ev = Evaluator::default();
    // The string doubles at each level: 2^40 bytes.
    let mut text = String::from("[");
    for i in 0..40 {
        text.push_str(&format!("s{i} = strcat(s{j}, s{j}); ", j = i + 1));
    }
    text.push_str("s40 = \"x\"]");
    let strings = ad(&text);
    let v = ev.eval_attr("s0", &strings, None);
    assert!(v.is_error(), "{v:?}");
    assert!(ev.budget_exhausted());
    // The failure is the whole evaluation's: containing it is not possible.
    let e = parse_expr("isError(s0) ? 1 : 2").unwrap();
    assert!(ev.eval(&e, Some(&strings), None).is_error());
    // A smaller one fits the budget.
    assert_eq!(
        int(&ev.eval(&parse_expr("size(s30)").unwrap(), Some(&strings), None)),
        Some(1024)
    );
    assert!(!ev.budget_exhausted());

    // Selection over a list of lists is mapped over every element.
    let mut text = String::from("[");
    for i in 0..40 {
        text.push_str(&format!("l{i} = {{l{j}, l{j}}}; ", j = i + 1));
    }
    text.push_str("l40 = {[v = 1]}]");
    let lists = ad(&text);
    assert!(ev
        .eval(&parse_expr("l0.v").unwrap(), Some(&lists), None)
        .is_error());
    assert!(ev.budget_exhausted());

    // A substitution whose output would dwarf its inputs.
    let mut text = String::from("[");
    for i in 0..14 {
        text.push_str(&format!("s{i} = strcat(s{j}, s{j}); ", j = i + 1));
    }
    text.push_str("s14 = \"abcdefgh\"]");
    let big = ad(&text);
    let e = parse_expr("size(replaceAll(\"a\", s0, s0))").unwrap();
    assert!(ev.eval(&e, Some(&big), None).is_error());
    assert!(ev.budget_exhausted());
    // the same substitution on small strings is fine
    let e = parse_expr("replaceAll(\"a\", s13, \"-\")").unwrap();
    assert!(!ev.eval(&e, Some(&big), None).is_error());
}

#[test]
fn the_budget_can_be_set_and_ordinary_work_fits_it() {
    let chain = ad(&doubling_chain(20, "a", "1"));
    let mut ev = Evaluator::default();
    ev.set_memoisation(false);
    // Without remembering, 2^20 additions exceed the default budget.
    assert!(ev.eval_attr("a0", &chain, None).is_error());
    assert!(ev.budget_exhausted());
    // With a larger budget the plain evaluation completes.
    ev.set_step_limit(100_000_000);
    assert_eq!(int(&ev.eval_attr("a0", &chain, None)), Some(1 << 20));
    ev.set_memoisation(true);
    ev.set_step_limit(50);
    assert_eq!(ev.step_limit(), 50);
    assert!(ev
        .eval_attr("a0", &ad(&doubling_chain(40, "a", "1")), None)
        .is_error());
    // The next evaluation starts with a fresh budget.
    assert_eq!(
        int(&ev.eval_attr("a0", &ad(&doubling_chain(3, "a", "1")), None)),
        Some(8)
    );
    assert!(!ev.budget_exhausted());
}

/// Evaluates `expr` with and without remembering; both must agree.
fn same_both_ways(expr: &str, my: &ClassAd, target: Option<&ClassAd>) -> Value {
    let e = parse_expr(expr).unwrap();
    let mut plain = Evaluator::default();
    plain.set_memoisation(false);
    let want = plain.eval(&e, Some(my), target);
    let got = Evaluator::default().eval(&e, Some(my), target);
    assert_eq!(
        got.to_string(),
        want.to_string(),
        "remembering changed the value of {expr}"
    );
    got
}

#[test]
fn remembering_keeps_scopes_apart() {
    // The same names on both sides of a match, each side's expressions
    // resolved in its own ad.
    let my = ad("[x = 1; v = x + x; w = TARGET.v + v]");
    let target = ad("[x = 2; v = x * 10; w = MY.v + v + TARGET.x]");
    assert_eq!(
        same_both_ways("v + TARGET.v + w + TARGET.w + v", &my, Some(&target)).to_string(),
        (2 + 20 + 22 + (20 + 20 + 1) + 2).to_string()
    );
    // Nested ads and parent scopes: `x` in the nested ad is its own.
    let nested =
        ad("[x = 1; v = x + 1; n = [x = 5; v = x + 1; u = parent.v + v; m = [t = v * x]]]");
    assert_eq!(
        same_both_ways("v + n.v + n.u + n.m.t + v", &nested, None).to_string(),
        (2 + 6 + 8 + 30 + 2).to_string()
    );
    // Two job ads chained to one cluster ad: the cluster's expression is
    // evaluated in each job's scope.
    let cluster = ad("[Big = ProcId * 10; Req = Big + 1]");
    let mut p0 = ad("[ProcId = 1]");
    p0.chain_to(cluster.clone());
    let mut p1 = ad("[ProcId = 2]");
    p1.chain_to(cluster);
    assert_eq!(
        same_both_ways("Req + TARGET.Req + Big", &p0, Some(&p1)).to_string(),
        (11 + 21 + 10).to_string()
    );
    // The root scope: `.x` and `toplevel` inside evalInEachContext name the
    // context ad, outside the evaluation's own root.
    let rooted = ad("[x = 1; y = .x + 1; ads = {[x = 10], [x = 20]}]");
    assert_eq!(
        same_both_ways("y + sum(evalInEachContext(x + 1, ads)) + y", &rooted, None).to_string(),
        (2 + 11 + 21 + 2).to_string()
    );
    // Cycles: a value computed while its own attribute was in progress
    // depends on the order, exactly as without remembering.
    let cyc = ad("[a = b; b = isUndefined(a) ? 1 : a + 10; c = a + b; d = {b, a, c, b}]");
    for expr in [
        "a",
        "b",
        "c",
        "a + b + c",
        "d",
        "c + a",
        "{c, b, a}",
        "[q = b].q + a",
    ] {
        same_both_ways(expr, &cyc, None);
    }
    let cyc2 = ad("[p = q + 1; q = r; r = isUndefined(p) ? 5 : p; s = {p, q, r, p}]");
    for expr in ["p", "q", "r", "s", "r + q + p", "{q, p, r, q}"] {
        same_both_ways(expr, &cyc2, None);
    }
}
