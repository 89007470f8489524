//! One part of a multipart body, and a file part stored in a temporary file.

use std::path::{Path, PathBuf};

use bytes::{Bytes, BytesMut};
use http::StatusCode;
use tokio::io::{AsyncWrite, AsyncWriteExt};

use super::{MultipartLimits, error, from_multer, too_large};
use crate::error::HttpError;

/// The part being read, kept by the [`super::Multipart`] it came from.
pub(super) struct Current {
    field: multer::Field<'static>,
    name: String,
    file_name: Option<String>,
    is_file: bool,
    content_type: Option<String>,
    /// Bytes of the part read so far.
    read: u64,
    /// Most bytes it may have: the field or the file size limit.
    limit: u64,
    done: bool,
}

impl Current {
    /// The part `index` (from 1); a part without a name is a 400.
    pub(super) fn new(
        field: multer::Field<'static>,
        index: usize,
        limits: &MultipartLimits,
    ) -> Result<Self, HttpError> {
        let name = match field.name() {
            Some(name) if !name.is_empty() => name.to_owned(),
            _ => {
                return Err(error(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "multipart part {index} has no name (Content-Disposition: form-data; \
                         name=\"...\")"
                    ),
                ));
            }
        };
        let raw_file_name = field.file_name();
        let is_file = raw_file_name.is_some();
        let file_name = raw_file_name.and_then(super::sanitise_file_name);
        let content_type = field.content_type().map(ToString::to_string);
        let limit = if is_file {
            limits.file_size
        } else {
            limits.field_size
        };
        Ok(Self {
            field,
            name,
            file_name,
            is_file,
            content_type,
            read: 0,
            limit,
            done: false,
        })
    }

    /// The next non-empty chunk, counted against the part's limit.
    pub(super) async fn next_chunk(&mut self) -> Result<Option<Bytes>, HttpError> {
        while !self.done {
            match self.field.chunk().await {
                Ok(Some(chunk)) if chunk.is_empty() => {}
                Ok(Some(chunk)) => {
                    self.read += chunk.len() as u64;
                    if self.read > self.limit {
                        return Err(self.too_large());
                    }
                    return Ok(Some(chunk));
                }
                Ok(None) => self.done = true,
                Err(e) => return Err(from_multer(&e)),
            }
        }
        Ok(None)
    }

    fn too_large(&self) -> HttpError {
        let (what, limit) = if self.is_file {
            ("file part", "file size limit")
        } else {
            ("field", "field size limit")
        };
        too_large(format!(
            "multipart {what} {} exceeds the {limit} of {} bytes",
            quoted(&self.name),
            self.limit
        ))
    }
}

/// A name for a message: quoted, escaped, at most 64 characters.
fn quoted(name: &str) -> String {
    let short: String = name.chars().take(64).collect();
    format!("{short:?}")
}

/// One part of a [`Multipart`](super::Multipart) body: a text field or a file. Its bytes are
/// read once, in order, by one of [`Part::chunk`], [`Part::bytes`], [`Part::text`],
/// [`Part::write_to`] or [`Part::save_to_temp`]; each counts them against the part's limit
/// (**413** past it).
pub struct Part<'a> {
    current: &'a mut Current,
    /// The multipart's failure slot: an error here ends the whole body.
    failed: &'a mut Option<HttpError>,
}

impl std::fmt::Debug for Part<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Part")
            .field("name", &self.current.name)
            .field("file_name", &self.current.file_name)
            .field("content_type", &self.current.content_type)
            .finish_non_exhaustive()
    }
}

impl<'a> Part<'a> {
    pub(super) fn new(current: &'a mut Current, failed: &'a mut Option<HttpError>) -> Self {
        Self { current, failed }
    }

    /// The part's name (`Content-Disposition: form-data; name="..."`), never empty.
    pub fn name(&self) -> &str {
        &self.current.name
    }

    /// True when the part is a file: its `Content-Disposition` has a `filename`, even an empty
    /// one (a browser's file input with no file chosen). A file is held to the file size limit,
    /// a field to the field size limit.
    pub fn is_file(&self) -> bool {
        self.current.is_file
    }

    /// The file name the client gave, made safe to show or to use as a hint
    /// ([`sanitise_file_name`](super::sanitise_file_name)): no directories, no `..`, no
    /// leading dots, no control characters; `None` when the part has none or nothing is left.
    /// Never build a path from it without your own rules: store under a name you choose.
    pub fn file_name(&self) -> Option<&str> {
        self.current.file_name.as_deref()
    }

    /// The part's `Content-Type` as the client wrote it: a claim, not a fact (check the
    /// bytes when it matters).
    pub fn content_type(&self) -> Option<&str> {
        self.current.content_type.as_deref()
    }

    /// The part's headers.
    pub fn headers(&self) -> &http::HeaderMap {
        self.current.field.headers()
    }

    /// Most bytes this part may have: the file or the field size limit.
    pub fn limit(&self) -> u64 {
        self.current.limit
    }

    /// The next chunk of the part's bytes, as they arrive; `None` at its end.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, HttpError> {
        if let Some(err) = self.failed.as_ref() {
            return Err(err.clone());
        }
        let result = self.current.next_chunk().await;
        if let Err(err) = &result {
            *self.failed = Some(err.clone());
        }
        result
    }

    /// All the part's bytes, in memory: at most its limit ([`Part::limit`]).
    pub async fn bytes(mut self) -> Result<Bytes, HttpError> {
        let mut all = BytesMut::new();
        while let Some(chunk) = self.chunk().await? {
            all.extend_from_slice(&chunk);
        }
        Ok(all.freeze())
    }

    /// The part's bytes as UTF-8 text; **400** when they are not.
    pub async fn text(self) -> Result<String, HttpError> {
        let name = quoted(self.name());
        let bytes = self.bytes().await?;
        String::from_utf8(bytes.into()).map_err(|_| {
            error(
                StatusCode::BAD_REQUEST,
                format!("multipart part {name} is not valid UTF-8"),
            )
        })
    }

    /// Writes the part's bytes to `sink` as they arrive and flushes it; returns how many there
    /// were. A sink that fails is a 500 (logged).
    pub async fn write_to<W>(mut self, sink: &mut W) -> Result<u64, HttpError>
    where
        W: AsyncWrite + Unpin + ?Sized,
    {
        let mut written = 0u64;
        while let Some(chunk) = self.chunk().await? {
            sink.write_all(&chunk).await.map_err(|e| store_failed(&e))?;
            written += chunk.len() as u64;
        }
        sink.flush().await.map_err(|e| store_failed(&e))?;
        Ok(written)
    }

    /// Streams the part's bytes into a new file in the system's temporary directory
    /// (`std::env::temp_dir()`, `TMPDIR` on Unix). The file is deleted when the
    /// [`TempUpload`] is dropped (or kept with [`TempUpload::persist`]), and when anything
    /// fails on the way: the client stopping mid-part leaves no file behind.
    pub async fn save_to_temp(self) -> Result<TempUpload, HttpError> {
        self.save_to_temp_in(std::env::temp_dir()).await
    }

    /// [`Part::save_to_temp`] in `dir`. Put it on the file system the file will be kept on,
    /// so that [`TempUpload::persist`] is a rename, not a copy.
    pub async fn save_to_temp_in(self, dir: impl AsRef<Path>) -> Result<TempUpload, HttpError> {
        let dir = dir.as_ref().to_owned();
        let created = tokio::task::spawn_blocking(move || {
            tempfile::Builder::new().prefix("upload-").tempfile_in(dir)
        })
        .await
        .map_err(|e| store_failed(&e))?
        .map_err(|e| store_failed(&e))?;
        // From here the path deletes its file when dropped, whatever happens next.
        let (mut file, path) = created.into_parts();
        let file_name = self.current.file_name.clone();
        let content_type = self.current.content_type.clone();
        // Each chunk goes to the blocking pool as it is, with the file: no copy into a write
        // buffer (as `tokio::fs::File` makes), so an upload holds one chunk at a time.
        let mut len = 0u64;
        let mut part = self;
        while let Some(chunk) = part.chunk().await? {
            len += chunk.len() as u64;
            file = tokio::task::spawn_blocking(move || {
                std::io::Write::write_all(&mut file, &chunk).map(|()| file)
            })
            .await
            .map_err(|e| store_failed(&e))?
            .map_err(|e| store_failed(&e))?;
        }
        Ok(TempUpload {
            path,
            len,
            file_name,
            content_type,
        })
    }
}

/// The 500 for a sink or temporary file that failed (the cause goes to the log).
fn store_failed(err: &dyn std::fmt::Display) -> HttpError {
    tracing::error!(error = %err, "storing a multipart part failed");
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "storing the uploaded part failed",
    )
    .with_exception(true)
}

/// A file part stored in a temporary file ([`Part::save_to_temp`]): deleted when dropped,
/// unless kept with [`TempUpload::persist`].
#[derive(Debug)]
pub struct TempUpload {
    path: tempfile::TempPath,
    len: u64,
    file_name: Option<String>,
    content_type: Option<String>,
}

impl TempUpload {
    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its size in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when the part was empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The part's sanitised file name ([`Part::file_name`]).
    pub fn file_name(&self) -> Option<&str> {
        self.file_name.as_deref()
    }

    /// The part's `Content-Type`, as the client wrote it.
    pub fn content_type(&self) -> Option<&str> {
        self.content_type.as_deref()
    }

    /// Opens the file to read it.
    pub async fn open(&self) -> std::io::Result<tokio::fs::File> {
        tokio::fs::File::open(&self.path).await
    }

    /// Moves the file to `to` (a rename: on the same file system) and keeps it; returns where
    /// it now is. On failure the file stays temporary and is deleted.
    pub async fn persist(self, to: impl AsRef<Path>) -> std::io::Result<PathBuf> {
        let to = to.as_ref().to_owned();
        tokio::task::spawn_blocking(move || {
            self.path.persist(&to).map(|()| to).map_err(|e| e.error)
        })
        .await
        .map_err(std::io::Error::other)?
    }
}
