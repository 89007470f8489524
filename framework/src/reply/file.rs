//! Files and named bytes as a handler's answer: [`NamedFile`] (a file on disk, streamed) and
//! [`Attachment`] (bytes in memory under a name), answered by static serve's own machinery:
//! `ETag` and `Last-Modified`, 304 for `If-None-Match` / `If-Modified-Since`, 412 for
//! `If-Match` / `If-Unmodified-Since`, one `Range` as 206 (`If-Range` honoured) or 416,
//! `Content-Type` by the name's extension, `X-Content-Type-Options: nosniff`, and
//! `Content-Disposition` ([`Disposition`]) when asked for.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::StatusCode;
use http::header::{CACHE_CONTROL, CONTENT_DISPOSITION, CONTENT_TYPE, HeaderValue};
use sha2::{Digest, Sha256};

use super::Disposition;
use crate::blocking_file::BlockingFile;
use crate::body::BodyStream;
use crate::context::Context;
use crate::error::{HttpError, Result};
use crate::representation::{self, Answer, Representation, content_type, weak_etag};

/// Category of the errors of the file replies.
pub const CATEGORY: &str = "framework-file";

/// `Cache-Control` of a file reply when the handler set none: the client revalidates with the
/// validators (as static serve without `max_age`).
const REVALIDATE: HeaderValue = HeaderValue::from_static("no-cache");

/// A file on disk as the answer, opened by [`NamedFile::open`] and streamed in 64 KiB chunks
/// (never read whole), with ranges and conditional requests as static serve answers them
/// (see the [module](self)). The `ETag` is weak, from the size and modification time.
///
/// By default the file is sent with no `Content-Disposition` (the browser shows it as its type
/// says); [`attachment`](Self::attachment) makes it a download, [`inline`](Self::inline) names
/// it for "save as", and [`file_name`](Self::file_name) gives it another name. A
/// `Cache-Control` the handler set stays; without one it is `no-cache`.
///
/// The file is held open from `open` until the body has been sent, or the client went away,
/// or the answer was a 304 or an error: the handle is released then. The path is opened as
/// given: a name taken from the request belongs in
/// [`StaticServe`](crate::middleware::static_serve::StaticServe), which keeps it under a root.
///
/// ```no_run
/// use framework::reply::NamedFile;
/// use framework::{Context, Result};
///
/// async fn report(_ctx: &mut Context) -> Result<NamedFile> {
///     Ok(NamedFile::open("reports/2024.pdf").await?.file_name("Report 2024 – final.pdf"))
/// }
/// # let _ = report;
/// ```
#[derive(Debug)]
pub struct NamedFile {
    file: std::fs::File,
    size: u64,
    modified: Option<SystemTime>,
    content_type: HeaderValue,
    name: String,
    disposition: Option<Disposition>,
}

impl NamedFile {
    /// Opens `path` (on the blocking pool). A missing file is **404** `file not found`; a
    /// directory or anything else that is not a regular file (a device, a pipe) is **404**
    /// `not a regular file`, refused before it is opened; both of category `framework-file`.
    /// Any other failure (permissions) is a 500, its cause logged.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, crate::Error> {
        let path = path.as_ref().to_owned();
        let opened = tokio::task::spawn_blocking(move || -> std::io::Result<Option<_>> {
            // Checked before opening: opening a pipe would wait for a writer.
            if !std::fs::metadata(&path)?.is_file() {
                return Ok(None);
            }
            let file = std::fs::File::open(&path)?;
            let meta = file.metadata()?;
            if !meta.is_file() {
                return Ok(None);
            }
            Ok(Some((file, meta, path)))
        })
        .await
        .map_err(std::io::Error::other)?;
        let (file, meta, path) = match opened {
            Ok(Some(opened)) => opened,
            Ok(None) => return Err(not_found("not a regular file").into()),
            Err(err) if is_not_found(&err) => return Err(not_found("file not found").into()),
            Err(err) => return Err(err.into()),
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(Self {
            file,
            size: meta.len(),
            modified: meta.modified().ok(),
            content_type: content_type(&path.to_string_lossy()),
            name,
            disposition: None,
        })
    }

    /// Sent as a download: `Content-Disposition: attachment` with the file's name (or the one
    /// [`file_name`](Self::file_name) gives).
    pub fn attachment(mut self) -> Self {
        self.disposition = Some(Disposition::Attachment);
        self
    }

    /// Shown in the browser, named for "save as": `Content-Disposition: inline` with the
    /// file's name.
    pub fn inline(mut self) -> Self {
        self.disposition = Some(Disposition::Inline);
        self
    }

    /// The name the client sees (in place of the file's own), made a download unless
    /// [`inline`](Self::inline) was chosen. The `Content-Type` still comes from the file's
    /// own extension.
    pub fn file_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self.disposition.get_or_insert(Disposition::Attachment);
        self
    }

    /// Sends `content_type` instead of the type the extension gives.
    pub fn content_type(mut self, content_type: HeaderValue) -> Self {
        self.content_type = content_type;
        self
    }

    /// The file's size in bytes, when it was opened.
    pub fn size(&self) -> u64 {
        self.size
    }
}

fn not_found(message: &'static str) -> HttpError {
    HttpError::with(StatusCode::NOT_FOUND, CATEGORY, message)
}

/// The portable kinds of "no such file" (as static serve reads them).
fn is_not_found(err: &std::io::Error) -> bool {
    matches!(
        err.kind(),
        std::io::ErrorKind::NotFound
            | std::io::ErrorKind::NotADirectory
            | std::io::ErrorKind::InvalidFilename
    )
}

/// The `Cache-Control` to set: none when the handler set one.
fn cache_control(ctx: &Context) -> Option<HeaderValue> {
    (!ctx.response_headers().contains_key(CACHE_CONTROL)).then_some(REVALIDATE)
}

/// An error as its status and text, for a reply made without the chain's error handler.
fn answer_error(ctx: &mut Context, err: &crate::Error) {
    ctx.set_status(err.status());
    ctx.set_response_header(CONTENT_TYPE, crate::header::TEXT_UTF8);
    ctx.body_mut().set_bytes(err.text());
}

fn set_disposition(ctx: &mut Context, disposition: Option<Disposition>, name: &str) {
    if let Some(disposition) = disposition {
        ctx.set_response_header(CONTENT_DISPOSITION, disposition.header(name));
    }
}

impl crate::IntoReply for NamedFile {
    const LEAVES_VALUE: bool = false;

    /// As [`try_into_reply`](crate::IntoReply::try_into_reply), with a 412 or 416 answered
    /// as its status and text.
    fn into_reply(self, ctx: &mut Context) {
        if let Err(err) = self.try_into_reply(ctx) {
            answer_error(ctx, &err);
        }
    }

    fn try_into_reply(self, ctx: &mut Context) -> Result {
        let NamedFile {
            mut file,
            size,
            modified,
            content_type,
            name,
            disposition,
        } = self;
        let representation = Representation {
            size,
            etag: weak_etag(size, modified.unwrap_or(UNIX_EPOCH)),
            last_modified: modified,
            content_type,
            encoding: None,
            cache_control: cache_control(ctx),
        };
        let Answer::Bytes { start, len } = representation::answer(ctx, representation, CATEGORY)?
        else {
            return Ok(());
        };
        // Only on an answer with the file: a 412 or 416 error body is not the file.
        set_disposition(ctx, disposition, &name);
        if start > 0 {
            // Moves the file's offset, no I/O: cheap enough on the async worker.
            std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(start))?;
        }
        ctx.body_mut()
            .set_stream(BodyStream::from_reader(BlockingFile::new(file), len));
        Ok(())
    }
}

/// Bytes in memory as a file called `name`: `Content-Type` from the name's extension,
/// `Content-Disposition: attachment` with the name (or `inline`), a strong `ETag` from the
/// bytes' SHA-256 (computed when the reply is made, so this is for bytes of moderate size),
/// and ranges and conditional requests as for a [`NamedFile`].
///
/// ```
/// use framework::reply::Attachment;
/// use framework::testing::TestClient;
/// use framework::{App, Context, Result};
///
/// async fn export(_ctx: &mut Context) -> Result<Attachment> {
///     Ok(Attachment::new("id,name\n1,Ada\n", "users – 2024.csv"))
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let client = TestClient::new(App::new().get("/export", export).build().unwrap());
/// let res = client.get("/export").send().await;
/// assert_eq!(res.header("content-type"), Some("text/csv; charset=utf-8"));
/// assert_eq!(
///     res.header("content-disposition"),
///     Some("attachment; filename=\"users _ 2024.csv\"; filename*=UTF-8''users%20%E2%80%93%202024.csv")
/// );
/// assert_eq!(res.text(), "id,name\n1,Ada\n");
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Attachment {
    bytes: Bytes,
    name: String,
    content_type: HeaderValue,
    last_modified: Option<SystemTime>,
    disposition: Disposition,
}

impl Attachment {
    /// `bytes` as a download called `name`.
    pub fn new(bytes: impl Into<Bytes>, name: impl Into<String>) -> Self {
        let name = name.into();
        Self {
            bytes: bytes.into(),
            content_type: content_type(&name),
            name,
            last_modified: None,
            disposition: Disposition::Attachment,
        }
    }

    /// Shown in the browser when it can (`Content-Disposition: inline`), not downloaded.
    pub fn inline(mut self) -> Self {
        self.disposition = Disposition::Inline;
        self
    }

    /// Sends `content_type` instead of the type the name's extension gives.
    pub fn content_type(mut self, content_type: HeaderValue) -> Self {
        self.content_type = content_type;
        self
    }

    /// When the bytes last changed: sent as `Last-Modified`, and compared with
    /// `If-Modified-Since`, `If-Unmodified-Since` and a date in `If-Range`.
    pub fn last_modified(mut self, time: SystemTime) -> Self {
        self.last_modified = Some(time);
        self
    }
}

impl crate::IntoReply for Attachment {
    const LEAVES_VALUE: bool = false;

    /// As [`try_into_reply`](crate::IntoReply::try_into_reply), with a 412 or 416 answered
    /// as its status and text.
    fn into_reply(self, ctx: &mut Context) {
        if let Err(err) = self.try_into_reply(ctx) {
            answer_error(ctx, &err);
        }
    }

    fn try_into_reply(self, ctx: &mut Context) -> Result {
        let size = self.bytes.len() as u64;
        let digest: [u8; 32] = Sha256::digest(&self.bytes).into();
        let representation = Representation {
            size,
            etag: crate::conditional::strong_etag(size, &digest),
            last_modified: self.last_modified,
            content_type: self.content_type,
            encoding: None,
            cache_control: cache_control(ctx),
        };
        let Answer::Bytes { start, len } = representation::answer(ctx, representation, CATEGORY)?
        else {
            return Ok(());
        };
        set_disposition(ctx, Some(self.disposition), &self.name);
        // `start + len <= size` by construction.
        let (start, end) = (start as usize, (start + len) as usize);
        ctx.body_mut().set_bytes(self.bytes.slice(start..end));
        Ok(())
    }
}

/// 200 and 206 with the bytes (`application/octet-stream`, the type being the file's), and
/// the 304 of a conditional request.
fn describe(operation: &mut crate::openapi::Operation<'_>) {
    let binary = schemars::json_schema!({"type": "string", "format": "binary"});
    for status in [200, 206] {
        operation.reply(
            status,
            Some("application/octet-stream"),
            Some(binary.clone()),
        );
    }
    operation.reply(304, None, None);
    for status in [412, 416] {
        operation.error(status);
    }
    operation.streamed();
}

impl crate::openapi::DescribeReply for NamedFile {
    fn describe_reply(operation: &mut crate::openapi::Operation<'_>) {
        describe(operation);
    }
}

impl crate::openapi::DescribeReply for Attachment {
    fn describe_reply(operation: &mut crate::openapi::Operation<'_>) {
        describe(operation);
    }
}
