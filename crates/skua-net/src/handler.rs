//! Handlers typed with their route's messages.
//!
//! A protocol route is a [`Route<Req, Resp>`](skua_proto::Route);
//! [`crate::Routes::command`] takes for it only a handler made by [`post`]
//! from an `async fn` whose last argument takes a `Req` ([`Json<Req>`], or
//! [`Body`] for [`RawBytes`]) and whose result answers a `Resp`
//! ([`Json<Resp>`], a [`JsonStream<Resp>`], a [`Response`] for
//! [`RawBytes`], or any of those in a `Result<_, ApiError>`). The other
//! arguments are extractors of the request's head (`State`, [`crate::Caller`],
//! [`crate::Identity`], `HeaderMap`). The client's
//! [`crate::Client::command`] returns the route's `Resp`, so both ends
//! agree with the protocol or do not compile.

use std::future::Future;
use std::marker::PhantomData;

use axum::body::Body;
use axum::extract::{FromRequest, FromRequestParts};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;
use serde::de::DeserializeOwned;
use serde::Serialize;
use skua_proto::RawBytes;

use crate::server::{ApiError, Json};

/// A result that answers a route whose reply is `Resp`.
pub trait Reply<Resp>: IntoResponse {}

impl<T: Serialize> Reply<T> for Json<T> {}

impl<Resp, T: Reply<Resp>> Reply<Resp> for Result<T, ApiError> {}

/// A file's bytes, streamed ([`crate::file_response`]).
impl Reply<RawBytes> for Response {}

/// A response the handler built itself that encodes a `T`, such as the
/// streamed array of [`crate::json_array_response`]: the handler vouches
/// for its shape.
pub struct JsonStream<T> {
    response: Response,
    encodes: PhantomData<fn() -> T>,
}

impl<T> JsonStream<T> {
    /// `response`, which encodes a `T`.
    pub fn new(response: Response) -> Self {
        JsonStream {
            response,
            encodes: PhantomData,
        }
    }
}

impl<T> IntoResponse for JsonStream<T> {
    fn into_response(self) -> Response {
        self.response
    }
}

impl<T> Reply<T> for JsonStream<T> {}

/// An extractor that takes the body of a route whose request is `Req`.
pub trait RequestOf<Req> {}

impl<T: DeserializeOwned> RequestOf<T> for Json<T> {}

/// A file's bytes, streamed ([`crate::receive_file`]).
impl RequestOf<RawBytes> for Body {}

/// A handler for a route taking `Req` and answering `Resp`; `T` is the
/// tuple of its argument types (inferred). Implemented for `async fn`s of
/// one to six arguments, the last taking the body ([`RequestOf<Req>`]),
/// the others the request's head.
pub trait TypedHandler<T, S, Req, Resp>: Sized {
    /// The handler answering `POST`.
    fn into_post(self) -> MethodRouter<S>;
}

macro_rules! typed_handler {
    ([$($part:ident),*], $last:ident) => {
        impl<F, Fut, S, Req, Resp, $($part,)* $last>
            TypedHandler<($($part,)* $last,), S, Req, Resp> for F
        where
            F: FnOnce($($part,)* $last) -> Fut + Clone + Send + Sync + 'static,
            Fut: Future + Send,
            Fut::Output: Reply<Resp>,
            S: Clone + Send + Sync + 'static,
            $($part: FromRequestParts<S> + Send + 'static,)*
            $last: RequestOf<Req> + FromRequest<S> + Send + 'static,
        {
            fn into_post(self) -> MethodRouter<S> {
                axum::routing::post(self)
            }
        }
    };
}

typed_handler!([], T1);
typed_handler!([T1], T2);
typed_handler!([T1, T2], T3);
typed_handler!([T1, T2, T3], T4);
typed_handler!([T1, T2, T3, T4], T5);
typed_handler!([T1, T2, T3, T4, T5], T6);

/// A `POST` handler with the messages it takes and answers, for
/// [`crate::Routes::command`] (or, untyped, [`crate::Routes::route`]).
pub struct Typed<Req, Resp, S = ()> {
    pub(crate) router: MethodRouter<S>,
    messages: PhantomData<fn(Req) -> Resp>,
}

impl<Req, Resp, S> From<Typed<Req, Resp, S>> for MethodRouter<S> {
    fn from(t: Typed<Req, Resp, S>) -> Self {
        t.router
    }
}

/// `handler` answering `POST`, typed with the request its last argument
/// takes and the reply its result gives.
pub fn post<H, T, S, Req, Resp>(handler: H) -> Typed<Req, Resp, S>
where
    H: TypedHandler<T, S, Req, Resp>,
{
    Typed {
        router: handler.into_post(),
        messages: PhantomData,
    }
}
