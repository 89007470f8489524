//! [`JsonLines`]: a stream of values sent as newline-delimited JSON (NDJSON,
//! `application/x-ndjson`), one value per line, each as soon as the stream yields it.

use std::marker::PhantomData;
use std::pin::Pin;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use http::header::{CONTENT_TYPE, HeaderValue};
use serde::Serialize;

use crate::body::{BodyStream, BoxError};
use crate::context::Context;

/// The media type of newline-delimited JSON.
pub(crate) const NDJSON: &str = "application/x-ndjson";

/// A reply of newline-delimited JSON: `200`, `Content-Type: application/x-ndjson`, and each
/// value of a stream written by serde_json on one line ended by `\n` (JSON text has no raw
/// line breaks, so a line is always one value), sent as soon as the stream yields it.
///
/// A value serde_json cannot write (a map whose keys are not strings), or an error from a
/// stream of `Result`s ([`from_try_stream`](Self::from_try_stream)), ends the response there
/// and is logged: the status has been sent, so the client sees the connection cut, never a
/// short success. An endless stream should end at graceful shutdown:
/// `values.take_until(ctx.shutdown())`.
///
/// `T` is the type of the values (the stream is boxed), so a controller method names it:
/// `Result<JsonLines<Note>>`; the OpenAPI document lists the route's success as
/// `application/x-ndjson`, an array of `T` (the sequence, as OpenAPI 3.2 reads the schema of
/// a sequential media type).
///
/// ```
/// use framework::body::stream;
/// use framework::reply::JsonLines;
/// use framework::testing::TestClient;
/// use framework::{App, Context, Result};
///
/// #[derive(serde::Serialize)]
/// struct Row {
///     id: u32,
/// }
///
/// async fn rows(_ctx: &mut Context) -> Result<JsonLines<Row>> {
///     Ok(JsonLines::new(stream::iter((1..=3).map(|id| Row { id }))))
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let client = TestClient::new(App::new().get("/rows", rows).build().unwrap());
/// let res = client.get("/rows").send().await;
/// assert_eq!(res.header("content-type"), Some("application/x-ndjson"));
/// assert_eq!(res.text(), "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n");
/// # }
/// ```
pub struct JsonLines<T> {
    lines: Pin<Box<dyn Stream<Item = Result<Bytes, BoxError>> + Send>>,
    values: PhantomData<fn() -> T>,
}

impl<T: Serialize + Send + 'static> JsonLines<T> {
    /// The values of `values`, one per line.
    pub fn new<S>(values: S) -> Self
    where
        S: Stream<Item = T> + Send + 'static,
    {
        Self::boxed(values.map(|value| line(&value)))
    }

    /// The values of a stream that may fail: an error ends the response (see the type's doc).
    pub fn from_try_stream<S, E>(values: S) -> Self
    where
        S: Stream<Item = Result<T, E>> + Send + 'static,
        E: Into<BoxError>,
    {
        Self::boxed(values.map(|value| line(&value.map_err(Into::into)?)))
    }

    fn boxed(lines: impl Stream<Item = Result<Bytes, BoxError>> + Send + 'static) -> Self {
        let lines = lines.map(|line| {
            line.inspect_err(|err| {
                tracing::warn!(error = %err, "the JSON lines stream failed: its response ends here");
            })
        });
        Self {
            lines: Box::pin(lines),
            values: PhantomData,
        }
    }
}

/// One value as a line of JSON.
fn line<T: Serialize>(value: &T) -> Result<Bytes, BoxError> {
    let mut out = serde_json::to_vec(value)?;
    out.push(b'\n');
    Ok(out.into())
}

impl<T> std::fmt::Debug for JsonLines<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonLines").finish_non_exhaustive()
    }
}

impl<T: 'static> crate::IntoReply for JsonLines<T> {
    const LEAVES_VALUE: bool = false;
    fn into_reply(self, ctx: &mut Context) {
        ctx.set_response_header(CONTENT_TYPE, HeaderValue::from_static(NDJSON));
        ctx.body_mut()
            .set_stream(BodyStream::from_stream(self.lines));
    }
}

/// The document's success for a stream of `items`.
fn describe(operation: &mut crate::openapi::Operation<'_>, items: Option<schemars::Schema>) {
    let items = items.map_or_else(|| serde_json::json!({}), schemars::Schema::to_value);
    let sequence = schemars::json_schema!({"type": "array", "items": items});
    operation.reply(200, Some(NDJSON), Some(sequence));
    operation.streamed();
}

/// A stream of `T`s, each described by `T`'s schema.
impl<T: schemars::JsonSchema> crate::openapi::DescribeReply for JsonLines<T> {
    fn describe_reply(operation: &mut crate::openapi::Operation<'_>) {
        let items = operation.schema_generator().subschema_for::<T>();
        describe(operation, Some(items));
    }
}

// A stream of values without a schema: the controller macro's probe (see `openapi::Probe`)
// finds this after `DescribeReply`, which needs `T`'s schema, and describes the items open.
impl<T> crate::openapi::ViaReplySchema for &crate::openapi::Probe<JsonLines<T>> {
    fn reply_schema(&self, site: crate::openapi::ProbeSite<'_, '_>) -> Option<schemars::Schema> {
        site.describe_reply(|operation| describe(operation, None))
    }
}
