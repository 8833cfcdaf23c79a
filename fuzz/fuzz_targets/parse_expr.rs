//! Arbitrary bytes as a ClassAd expression: parsing must never crash; an
//! expression that parses must print to text that parses back to the same
//! tree (and the same text), and must evaluate without crashing, with no
//! ads and, when it is an ad literal, with that ad as MY and TARGET.

#![no_main]

use classad::{parse_expr, parse_expr_bytes, unparse, EvalOptions, Evaluator, Expr};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(expr) = parse_expr_bytes(data) else {
        return;
    };
    let text = unparse(&expr);
    let again = match parse_expr(&text) {
        Ok(e) => e,
        Err(err) => panic!("unparsed text does not parse: {text:?}: {err}"),
    };
    assert!(again == expr, "parse(unparse(e)) != e for {text:?}");
    assert_eq!(unparse(&again), text, "unparse is not a fixed point");

    for strict in [false, true] {
        let mut ev = Evaluator::new(EvalOptions {
            strict,
            ..EvalOptions::default()
        });
        let _ = ev.eval(&expr, None, None).to_string();
        if let Expr::Ad(ad) = &expr {
            let _ = ev.eval(&expr, Some(ad), Some(ad)).to_string();
            let names: Vec<String> = ad.names().map(|n| n.as_str().to_string()).collect();
            for name in &names {
                let _ = ev.eval_attr(name, ad, None).to_string();
                let _ = ev.eval_attr(name, ad, Some(ad)).to_string();
            }
            let _ = classad::symmetric_match(&mut ev, ad, ad);
            let _ = classad::rank(&mut ev, ad, ad).to_string();
        }
    }
});
