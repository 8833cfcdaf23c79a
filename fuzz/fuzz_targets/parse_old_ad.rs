//! Arbitrary bytes as an old-syntax ad (`Name = expr` lines): parsing must
//! never crash; a parsed ad must print in the new syntax to text that parses
//! back to the same ad, and its attributes must evaluate without crashing,
//! alone and in a match of the ad with itself.

#![no_main]

use classad::{parse_ad, parse_old_ad, unparse_ad, Evaluator};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(ad) = parse_old_ad(src) else {
        return;
    };
    let text = unparse_ad(&ad);
    let again = match parse_ad(&text) {
        Ok(a) => a,
        Err(err) => panic!("unparsed ad does not parse: {text:?}: {err}"),
    };
    assert!(again == ad, "parse_ad(unparse_ad(ad)) != ad for {text:?}");

    let mut ev = Evaluator::default();
    let names: Vec<String> = ad.names().map(|n| n.as_str().to_string()).collect();
    for name in &names {
        let _ = ev.eval_attr(name, &ad, None).to_string();
        let _ = ev.eval_attr(name, &ad, Some(&ad)).to_string();
    }
    let _ = classad::symmetric_match(&mut ev, &ad, &ad);
    let _ = classad::rank(&mut ev, &ad, &ad).to_string();
});
