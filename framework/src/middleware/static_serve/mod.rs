//! Serves static files from a [`FileSource`]: a directory ([`DirectorySource`]) or files
//! compiled into the binary (`EmbeddedSource`, feature `static-embed`).
//!
//! Put it on a wildcard route (`/static/*`): the wildcard is the file path. A plain `GET` of a
//! file of at most 64 KiB is read whole along with its metadata (one call to the source, one
//! trip to the blocking pool for a directory) and sent from memory; larger files, ranges,
//! `HEAD` and requests with validators are streamed in 64 KiB chunks, never read whole. Every
//! answer has `Content-Type` from the extension (text types get
//! `charset=utf-8`), `Content-Length`, `Last-Modified`, an `ETag`, `Cache-Control`,
//! `Accept-Ranges: bytes` and `X-Content-Type-Options: nosniff` (an uploaded SVG or HTML file
//! served inline would otherwise be a stored XSS vector).
//!
//! ```no_run
//! use std::time::Duration;
//! use framework::middleware::static_serve::{DirectorySource, StaticServe, StaticServeConfig};
//!
//! let assets = StaticServe::new(
//!     DirectorySource::new("assets").expect("assets directory"),
//!     StaticServeConfig::default()
//!         .max_age(Some(Duration::from_secs(3600))),
//! );
//! let app = framework::App::new().endpoint(http::Method::GET, "/static/*", assets);
//! # let _ = app;
//! ```
//!
//! - **Paths**: decoded once and refused with 400 `out of path` when they could leave the root
//!   (`..`, encoded or not, `\`, absolute paths, NUL, invalid UTF-8, drive letters, Windows
//!   device names, trailing dots) or when a symlink leads outside it. Dot files are 404 unless
//!   [`StaticServeConfig::allow_dot_files`]. A directory serves its index (`index.html`); a
//!   directory without one is 404, never a listing. A directory asked for without its trailing
//!   slash is redirected (307) to it, so relative links in the index resolve, as tower-http does.
//! - **Validators**: `ETag` is weak, `W/"<size hex>-<mtime hex>"`, or strong,
//!   `"<size hex>-<sha-256 base64url, 128 bits>"`, with `enable_strong_etag` or when the
//!   source knows no modification time. A strong tag on a directory source hashes the file on
//!   each request; an embedded source's hashes are computed at build time.
//! - **Conditional requests** before ranges (RFC 9110 section 13.2.2): `If-Match` /
//!   `If-Unmodified-Since` give 412, `If-None-Match` / `If-Modified-Since` give 304.
//! - **Ranges** (GET only): one range gives 206 with `Content-Range` and exactly those bytes
//!   (`bytes=0-99`, `bytes=100-`, `bytes=-500`); `If-Range` that does not match gives the whole
//!   file; a range starting past the end (or `bytes=-0`) gives 416 with `Content-Range:
//!   bytes */<size>`. Several ranges are answered with the whole file (200), and a `Range` that
//!   does not parse is ignored (RFC 9110 section 14.2).
//! - **Cache-Control**: `public, max-age=N[, s-maxage=M]` when an age is set, else `no-cache`
//!   (the client revalidates with the validators).
//! - **Precompressed siblings**: with `precompressed_br` / `precompressed_gzip`, `file.js.br` or
//!   `file.js.gz` is sent with its `Content-Encoding` when it exists and the client accepts it
//!   (highest q-value first, brotli on a tie), always with `Vary: Accept-Encoding`, as nginx's
//!   `gzip_static` and tower-http's `ServeDir::precompressed_*` do.
//! - **Compressed once**: a file sent whole from memory whose digest is known (every file of
//!   an embedded source; a file of at most 64 KiB with `enable_strong_etag`) is marked
//!   [`StaticBody`], so [`Compress`](crate::middleware::compress) compresses it once per
//!   encoding and keeps the result, instead of compressing it for every request. An embedded
//!   source's files are sent from memory whatever their size.
//! - **Not found**: 404, or with `not_found_next` the request goes on down the chain (when used
//!   as middleware: the route's handler, or the routes behind an app-level static serve).
//!
//! Errors have category `framework-static-serve`.

mod config;
mod path;
mod source;

#[cfg(feature = "static-embed")]
mod embedded;

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use bytes::Bytes;
use http::header::{
    HeaderValue, IF_MATCH, IF_MODIFIED_SINCE, IF_NONE_MATCH, IF_UNMODIFIED_SINCE, LOCATION, RANGE,
    VARY,
};
use http::{Method, StatusCode};
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;

use crate::body::BodyStream;
use crate::body::StaticBody;
use crate::conditional;
use crate::context::Context;
use crate::error::{HttpError, Result};
use crate::handler::{BoxFuture, Endpoint, EndpointFuture, Middleware, Next, endpoint_future};
use crate::negotiation::encoding_quality;
use crate::representation::{self, Answer, Representation, content_type, weak_etag};

pub use config::StaticServeConfig;
use path::{SafePath, resolve_static_path};
pub use source::{DirectorySource, FileInfo, FileReader, FileSource, SourceError};

#[cfg(feature = "static-embed")]
pub use embedded::EmbeddedSource;

/// Category of static serve errors.
pub const CATEGORY: &str = "framework-static-serve";

/// The static serve component: an [`Endpoint`] for a wildcard route, or a [`Middleware`].
pub struct StaticServe {
    source: Arc<dyn FileSource>,
    config: StaticServeConfig,
    cache_control: HeaderValue,
}

/// What serving found.
enum Served {
    /// The response is in the context.
    Done,
    /// No such file.
    NotFound,
}

/// The file chosen to answer: the requested one or a precompressed sibling.
struct Selected {
    path: String,
    info: Option<FileInfo>,
    /// The whole file, when it was read with its metadata ([`FileSource::stat_with_bytes`]).
    bytes: Option<Bytes>,
    encoding: Option<&'static str>,
}

/// The largest file read along with its metadata (one trip to the source): what it sends
/// whole from memory instead of streaming it.
const READ_WITH_STAT: u64 = 64 * 1024;

/// How much of a file to read along with its metadata for this request: a small file's all
/// when the answer will most likely carry it whole (a `GET` without `Range` or a validator
/// that may make it a 304), nothing otherwise.
fn read_with_stat(ctx: &Context) -> u64 {
    let likely_whole = *ctx.method() == Method::GET
        && !crate::header::has_any(
            ctx.request_headers(),
            &[
                RANGE,
                IF_NONE_MATCH,
                IF_MODIFIED_SINCE,
                IF_MATCH,
                IF_UNMODIFIED_SINCE,
            ],
        );
    if likely_whole { READ_WITH_STAT } else { 0 }
}

fn error(status: StatusCode, message: &'static str) -> crate::Error {
    HttpError::with(status, CATEGORY, message).into()
}

fn out_of_path() -> crate::Error {
    error(StatusCode::BAD_REQUEST, "out of path")
}

/// Errors that mean "no such file here": missing, a file where a directory was expected, or a
/// name the file system cannot hold (a segment of 256 bytes or more), which cannot name an
/// existing file either. By their portable kinds, never by an OS's error numbers (20 and 36
/// are `ENOTDIR` and `ENAMETOOLONG` on Linux only).
fn is_not_found(err: &std::io::Error) -> bool {
    matches!(
        err.kind(),
        std::io::ErrorKind::NotFound
            | std::io::ErrorKind::NotADirectory
            | std::io::ErrorKind::InvalidFilename
    )
}

impl StaticServe {
    /// Serves files from `source`.
    pub fn new(source: impl FileSource, config: StaticServeConfig) -> Self {
        let cache_control = cache_control(config.max_age, config.s_max_age);
        Self {
            source: Arc::new(source),
            config,
            cache_control,
        }
    }

    fn join(&self, path: &str) -> String {
        let base = self.config.path.trim_matches('/');
        match (base.is_empty(), path.is_empty()) {
            (true, _) => path.to_owned(),
            (false, true) => base.to_owned(),
            (false, false) => format!("{base}/{path}"),
        }
    }

    /// Metadata of `path` (`None` for a source without stat), and its bytes when it is a file
    /// of at most `up_to` bytes the source reads at once; `Ok(None)` for a missing file.
    async fn stat(
        &self,
        path: &str,
        up_to: u64,
    ) -> Result<Option<(Option<FileInfo>, Option<Bytes>)>> {
        // A source that holds its files in memory gives the bytes whatever `up_to` says.
        let found = self
            .source
            .stat_with_bytes(path, up_to)
            .await
            .map(|found| match found {
                Some((info, bytes)) => (Some(info), bytes),
                None => (None, None),
            });
        match found {
            Ok(found) => Ok(Some(found)),
            Err(SourceError::OutOfPath) => Err(out_of_path()),
            Err(SourceError::Io(err)) if is_not_found(&err) => Ok(None),
            Err(SourceError::Io(err)) => Err(err.into()),
        }
    }

    async fn serve(&self, ctx: &mut Context) -> Result<Served> {
        if self.config.deny_query_string && ctx.uri().query().is_some() {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "query string is not allowed",
            ));
        }
        let raw = match ctx.params().raw(crate::router::WILDCARD) {
            Some(raw) => raw,
            None => ctx.path().trim_start_matches('/'),
        };
        let (path, dir_form) = match resolve_static_path(raw).map_err(|_| out_of_path())? {
            SafePath::File { path, dir } => (path, dir),
            SafePath::Hidden { .. } if !self.config.allow_dot_files => {
                return Ok(Served::NotFound);
            }
            SafePath::Hidden { path, dir } => (path, dir),
        };
        let mut path = self.join(&path);
        let up_to = read_with_stat(ctx);
        let Some((mut info, mut bytes)) = self.stat(&path, up_to).await? else {
            return Ok(Served::NotFound);
        };
        if info.is_some_and(|i| i.is_dir) {
            if !dir_form {
                redirect_to_dir(ctx);
                return Ok(Served::Done);
            }
            let Some(index) = &self.config.index else {
                return Ok(Served::NotFound);
            };
            path = if path.is_empty() {
                index.clone()
            } else {
                format!("{path}/{index}")
            };
            let Some(found) = self.stat(&path, up_to).await? else {
                return Ok(Served::NotFound);
            };
            (info, bytes) = found;
            if info.is_some_and(|i| i.is_dir) {
                return Ok(Served::NotFound);
            }
        } else if dir_form && !path.is_empty() {
            // `/file.txt/` names a directory that is not there.
            return Ok(Served::NotFound);
        }
        if info.is_none() && !self.source.exists(&path).await {
            return Ok(Served::NotFound);
        }
        let content_type = content_type(&path);
        let selected = self.select_variant(ctx, path, info, bytes).await?;
        self.respond(ctx, selected, content_type).await?;
        Ok(Served::Done)
    }

    /// The precompressed sibling the client accepts best, if there is one.
    async fn select_variant(
        &self,
        ctx: &mut Context,
        path: String,
        info: Option<FileInfo>,
        bytes: Option<Bytes>,
    ) -> Result<Selected> {
        let mut variants: Vec<(&'static str, &'static str, f32)> = Vec::with_capacity(2);
        if self.config.precompressed_br {
            variants.push(("br", ".br", encoding_quality(ctx.request_headers(), "br")));
        }
        if self.config.precompressed_gzip {
            variants.push((
                "gzip",
                ".gz",
                encoding_quality(ctx.request_headers(), "gzip"),
            ));
        }
        if variants.is_empty() || info.is_none() {
            return Ok(Selected {
                path,
                info,
                bytes,
                encoding: None,
            });
        }
        ctx.response_headers_mut()
            .append(VARY, HeaderValue::from_static("Accept-Encoding"));
        // Stable sort: brotli stays first on equal q-values.
        variants.sort_by(|a, b| b.2.total_cmp(&a.2));
        for (encoding, suffix, q) in variants {
            if q <= 0.0 {
                continue;
            }
            let sibling = format!("{path}{suffix}");
            if let Some((Some(found), sibling_bytes)) = self.stat(&sibling, 0).await?
                && !found.is_dir
            {
                return Ok(Selected {
                    path: sibling,
                    info: Some(found),
                    bytes: sibling_bytes,
                    encoding: Some(encoding),
                });
            }
        }
        Ok(Selected {
            path,
            info,
            bytes,
            encoding: None,
        })
    }

    async fn respond(
        &self,
        ctx: &mut Context,
        selected: Selected,
        content_type: HeaderValue,
    ) -> Result {
        // A source without stat gives its bytes whole; the size then comes from them. A small
        // file may have come whole with its metadata.
        let (data, size, modified) = match selected.info {
            Some(info) => match selected.bytes {
                // Its length is the size: the file may have changed since it was listed.
                Some(bytes) => {
                    let size = bytes.len() as u64;
                    (Some(bytes), size, info.modified)
                }
                None => (None, info.size, info.modified),
            },
            None => {
                let data = self.source.get(&selected.path).await.map_err(|e| match e {
                    SourceError::OutOfPath => out_of_path(),
                    SourceError::Io(err) => err.into(),
                })?;
                let size = data.len() as u64;
                (Some(data), size, None)
            }
        };
        // A digest the source has for free (files compiled in) is asked for whenever the
        // bytes are in memory: with it, compress keeps this file's compressed forms.
        let strong = self.config.enable_strong_etag || modified.is_none();
        let digest = if strong || data.is_some() {
            match (self.source.content_hash(&selected.path).await, &data) {
                (Some(digest), _) => Some(digest),
                (None, Some(data)) if strong => Some(Sha256::digest(data).into()),
                (None, None) if strong => Some(self.hash_file(&selected.path).await?),
                (None, _) => None,
            }
        } else {
            None
        };
        let etag = match digest.filter(|_| strong) {
            Some(digest) => conditional::strong_etag(size, &digest),
            None => weak_etag(size, modified.unwrap_or(UNIX_EPOCH)),
        };
        // A range is another slice of the bytes: the mark does not match it.
        if let (Some(digest), Some(data), None) = (digest, &data, selected.encoding) {
            ctx.extensions_mut().insert(StaticBody::new(&digest, data));
        }
        let last_modified = modified.filter(|_| !self.config.disable_last_modified);
        let representation = Representation {
            size,
            etag,
            last_modified,
            content_type,
            encoding: selected.encoding,
            cache_control: Some(self.cache_control.clone()),
        };
        let (start, len) = match representation::answer(ctx, representation, CATEGORY)? {
            Answer::NotModified => return Ok(()),
            Answer::Bytes { start, len } => (start, len),
        };
        match data {
            Some(data) => {
                // In memory already: a slice, no copy. `start + len <= size` by construction.
                let (start, end) = (start as usize, (start + len) as usize);
                ctx.body_mut().set_bytes(data.slice(start..end));
            }
            None => {
                let reader =
                    self.source
                        .reader(&selected.path, start)
                        .await
                        .map_err(|e| match e {
                            SourceError::OutOfPath => out_of_path(),
                            SourceError::Io(err) => err.into(),
                        })?;
                ctx.body_mut()
                    .set_stream(BodyStream::from_reader(reader, len));
            }
        }
        Ok(())
    }

    /// SHA-256 of a file read through the source, in chunks.
    async fn hash_file(&self, path: &str) -> Result<[u8; 32]> {
        let mut reader = self.source.reader(path, 0).await.map_err(|e| match e {
            SourceError::OutOfPath => out_of_path(),
            SourceError::Io(err) => crate::Error::from(err),
        })?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = reader.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
        }
        Ok(hasher.finalize().into())
    }
}

fn redirect_to_dir(ctx: &mut Context) {
    // `GET //sub` must not send the client to `//sub/`, another host to a browser.
    let path = crate::reply::redirect::on_this_site(ctx.path());
    let location = match ctx.uri().query() {
        Some(query) => format!("{path}/?{query}"),
        None => format!("{path}/"),
    };
    ctx.set_status(StatusCode::TEMPORARY_REDIRECT);
    // The path came from a valid request line, so it is a valid header value.
    if let Ok(value) = HeaderValue::try_from(location) {
        ctx.set_response_header(LOCATION, value);
    }
}

fn cache_control(max_age: Option<Duration>, s_max_age: Option<Duration>) -> HeaderValue {
    if max_age.is_none() && s_max_age.is_none() {
        return HeaderValue::from_static("no-cache");
    }
    crate::header::public_cache_control(max_age.unwrap_or_default(), s_max_age)
}

impl Endpoint for StaticServe {
    fn call<'a>(&'a self, ctx: &'a mut Context) -> EndpointFuture<'a> {
        endpoint_future(async move {
            match self.serve(ctx).await? {
                Served::Done => Ok(()),
                Served::NotFound => Err(error(StatusCode::NOT_FOUND, "not found")),
            }
        })
    }
}

impl Middleware for StaticServe {
    fn handle<'a>(&'a self, ctx: &'a mut Context, next: Next<'a>) -> BoxFuture<'a, Result> {
        Box::pin(async move {
            if ctx.is_committed()
                || !(*ctx.method() == Method::GET || *ctx.method() == Method::HEAD)
            {
                return next.run(ctx).await;
            }
            match self.serve(ctx).await? {
                Served::Done => Ok(()),
                Served::NotFound if self.config.not_found_next => next.run(ctx).await,
                Served::NotFound => Err(error(StatusCode::NOT_FOUND, "not found")),
            }
        })
    }
}

#[cfg(test)]
mod tests;
