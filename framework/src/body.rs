//! Request and response bodies.
//!
//! A request body is either hyper's stream or bytes already in memory (the in-process test
//! client). It is read at most once, with a size limit, by whoever needs it.

use bytes::Bytes;
use http_body_util::BodyExt;

/// The request body as received.
#[derive(Debug, Default)]
pub enum RequestBody {
    /// No body, or already taken.
    #[default]
    Empty,
    /// Bytes already in memory.
    Full(Bytes),
    /// hyper's stream from the connection.
    Incoming(hyper::body::Incoming),
}

/// Why a body could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// More than the limit arrived.
    TooLarge,
    /// The connection failed while reading.
    Io(Box<dyn std::error::Error + Send + Sync>),
}

impl RequestBody {
    /// Reads the whole body, failing as soon as more than `limit` bytes have arrived.
    pub async fn read_limited(self, limit: usize) -> Result<Bytes, ReadError> {
        match self {
            RequestBody::Empty => Ok(Bytes::new()),
            RequestBody::Full(b) if b.len() > limit => Err(ReadError::TooLarge),
            RequestBody::Full(b) => Ok(b),
            RequestBody::Incoming(incoming) => {
                match http_body_util::Limited::new(incoming, limit)
                    .collect()
                    .await
                {
                    Ok(collected) => Ok(collected.to_bytes()),
                    Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                        Err(ReadError::TooLarge)
                    }
                    Err(e) => Err(ReadError::Io(e)),
                }
            }
        }
    }
}

/// The response body type the server sends.
pub type ResponseBody = http_body_util::Full<Bytes>;
