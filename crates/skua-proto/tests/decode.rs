//! Decoding arbitrary bytes as any message never panics, and every
//! message survives a JSON round trip.

use proptest::prelude::*;
use skua_proto::*;

fn decode_all(bytes: &[u8]) {
    let _ = serde_json::from_slice::<AdUpdate>(bytes);
    let _ = serde_json::from_slice::<Invalidate>(bytes);
    let _ = serde_json::from_slice::<Query>(bytes);
    let _ = serde_json::from_slice::<QueryReply>(bytes);
    let _ = serde_json::from_slice::<DaemonCommand>(bytes);
    let _ = serde_json::from_slice::<CommandReply>(bytes);
    let _ = serde_json::from_slice::<TokenClaims>(bytes);
    let _ = serde_json::from_slice::<WhoAmI>(bytes);
    let _ = serde_json::from_slice::<ErrorBody>(bytes);
    let _ = serde_json::from_slice::<Ack>(bytes);
}

fn level() -> impl Strategy<Value = AuthLevel> {
    prop::sample::select(AuthLevel::ALL.to_vec())
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        decode_all(&bytes);
    }

    #[test]
    fn json_like_text_never_panics(text in r#"[{}\[\]":,a-z0-9 \\]{0,80}"#) {
        decode_all(text.as_bytes());
    }

    #[test]
    fn claims_round_trip(
        sub in "[a-z]{1,8}@[a-z.]{1,12}",
        iat in any::<u64>(),
        exp in proptest::option::of(any::<u64>()),
        scope in prop::collection::vec(level(), 0..5),
        jti in "[0-9a-f]{0,32}",
    ) {
        let c = TokenClaims { sub, iat, nbf: None, exp, scope, jti };
        let text = serde_json::to_string(&c).unwrap();
        prop_assert_eq!(serde_json::from_str::<TokenClaims>(&text).unwrap(), c);
    }

    #[test]
    fn query_round_trip(
        ad_type in ".{0,10}",
        constraint in proptest::option::of(".{0,40}"),
        projection in prop::collection::vec(".{0,10}", 0..4),
    ) {
        let q = Query { ad_type, constraint, projection };
        let text = serde_json::to_string(&q).unwrap();
        prop_assert_eq!(serde_json::from_str::<Query>(&text).unwrap(), q);
    }
}

#[test]
fn ack_is_an_empty_object() {
    assert_eq!(serde_json::to_string(&Ack {}).unwrap(), "{}");
    assert!(serde_json::from_str::<Ack>(r#"{"later":1}"#).is_ok());
}
