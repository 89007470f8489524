//! Where static files come from: the [`FileSource`] trait and the directory source.

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::SystemTime;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::io::AsyncRead;

/// A file's metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileInfo {
    /// Size in bytes.
    pub size: u64,
    /// Last modification time, when the source knows it.
    pub modified: Option<SystemTime>,
    /// True for a directory.
    pub is_dir: bool,
}

/// A reader of a file's bytes.
pub type FileReader = Pin<Box<dyn AsyncRead + Send>>;

/// Why a source refused a path.
#[derive(Debug)]
pub enum SourceError {
    /// The path leads outside the source's root (e.g. through a symlink): 400 `out of path`.
    OutOfPath,
    /// Any other failure; `NotFound` answers 404.
    Io(io::Error),
}

impl From<io::Error> for SourceError {
    fn from(err: io::Error) -> Self {
        SourceError::Io(err)
    }
}

/// A source of static files, as the seed defines it (`exists`, `get`, `stat`, `reader`).
///
/// Paths are relative, `/`-separated, and already checked by [`super::StaticServe`]: no `..`,
/// no empty or absolute segments, nothing a platform would reinterpret. A source that follows
/// links must still make sure the file it opens lies under its root.
#[async_trait]
pub trait FileSource: Send + Sync + 'static {
    /// True when `file` exists.
    async fn exists(&self, file: &str) -> bool;

    /// The whole file. Used only for sources without [`FileSource::stat`].
    async fn get(&self, file: &str) -> Result<Bytes, SourceError>;

    /// The file's metadata; `Ok(None)` when the source keeps none (the file is then read whole
    /// with [`FileSource::get`], and only a strong ETag can be offered).
    async fn stat(&self, file: &str) -> Result<Option<FileInfo>, SourceError>;

    /// A reader positioned at byte `offset` of the file.
    async fn reader(&self, file: &str, offset: u64) -> Result<FileReader, SourceError>;

    /// [`FileSource::stat`], and the file's bytes as well when it is a file of at most
    /// `up_to` bytes and the source can read them in the same step (the directory source does:
    /// one trip to the blocking pool for a small file instead of two). `None` for the bytes
    /// means the file is read later with [`FileSource::reader`]; this default never reads
    /// them.
    async fn stat_with_bytes(
        &self,
        file: &str,
        up_to: u64,
    ) -> Result<Option<(FileInfo, Option<Bytes>)>, SourceError> {
        let _ = up_to;
        Ok(self.stat(file).await?.map(|info| (info, None)))
    }

    /// The file's content digest, when the source has it for free (an embedded source hashes
    /// at build time). A strong ETag is computed by reading the file otherwise.
    async fn content_hash(&self, file: &str) -> Option<[u8; 32]> {
        let _ = file;
        None
    }
}

/// Files under a directory, read on tokio's blocking pool and streamed in chunks (into buffers
/// made on the runtime's worker, see `blocking_file`).
///
/// The root is canonicalised once, at construction. Every request's path is canonicalised too
/// (symlinks resolved) and must still lie under the root: a symlink inside the root that points
/// outside it is refused as out of path, unlike tower-http's `ServeDir`, which follows it.
#[derive(Debug, Clone)]
pub struct DirectorySource {
    root: PathBuf,
}

impl DirectorySource {
    /// Files under `root`, which must exist and be a directory.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        let root = std::fs::canonicalize(root.as_ref())?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{} is not a directory", root.display()),
            ));
        }
        Ok(Self { root })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The canonical path of `file`, refused when it leaves the root. Blocking: call it on a
    /// blocking thread.
    fn resolve(&self, file: &str) -> Result<PathBuf, SourceError> {
        let full = std::fs::canonicalize(self.root.join(file))?;
        if full.starts_with(&self.root) {
            Ok(full)
        } else {
            Err(SourceError::OutOfPath)
        }
    }

    async fn blocking<T, F>(&self, file: &str, f: F) -> Result<T, SourceError>
    where
        T: Send + 'static,
        F: FnOnce(PathBuf) -> Result<T, SourceError> + Send + 'static,
    {
        let this = self.clone();
        let file = file.to_owned();
        tokio::task::spawn_blocking(move || f(this.resolve(&file)?))
            .await
            .map_err(|e| SourceError::Io(io::Error::other(e)))?
    }
}

#[async_trait]
impl FileSource for DirectorySource {
    async fn exists(&self, file: &str) -> bool {
        self.blocking(file, |_| Ok(())).await.is_ok()
    }

    async fn get(&self, file: &str) -> Result<Bytes, SourceError> {
        self.blocking(file, |path| Ok(Bytes::from(std::fs::read(path)?)))
            .await
    }

    async fn stat(&self, file: &str) -> Result<Option<FileInfo>, SourceError> {
        self.blocking(file, |path| Ok(Some(file_info(&std::fs::metadata(path)?))))
            .await
    }

    /// The metadata and, for a file of at most `up_to` bytes, its bytes, in one blocking call.
    /// The size is then the number of bytes read (the file may have changed since its
    /// metadata was read).
    async fn stat_with_bytes(
        &self,
        file: &str,
        up_to: u64,
    ) -> Result<Option<(FileInfo, Option<Bytes>)>, SourceError> {
        let mut bytes = worker_buffer();
        self.blocking(file, move |path| {
            use std::io::Read;
            let meta = std::fs::metadata(&path)?;
            let mut info = file_info(&meta);
            // Only a regular file: a pipe or a device in the directory is left to the reader,
            // as before, rather than read ahead here.
            if !meta.is_file() || info.size > up_to {
                return Ok(Some((info, None)));
            }
            bytes.reserve_exact(usize::try_from(info.size).unwrap_or(0));
            std::fs::File::open(&path)?
                .take(up_to)
                .read_to_end(&mut bytes)?;
            info.size = bytes.len() as u64;
            Ok(Some((info, Some(Bytes::from(bytes)))))
        })
        .await
    }

    /// Opens the file and seeks in one blocking call, and when what is left from `offset` is
    /// 64 KiB or less, reads it all there too: a small file is then sent without another trip
    /// to the blocking pool (each costs thread hand-offs; a 4 KiB file took three: stat, open,
    /// read). A larger one is read through tokio's file: a first chunk read ahead for it too
    /// cost each stream a third 64 KiB buffer (32 streams of a 1 MiB file: 19.4 MiB peak
    /// against 17.5, `wrk -c32` on the bench server).
    async fn reader(&self, file: &str, offset: u64) -> Result<FileReader, SourceError> {
        let mut first = worker_buffer();
        let (std_file, first) = self
            .blocking(file, move |path| {
                use std::io::{Read, Seek};
                let mut file = std::fs::File::open(path)?;
                if offset > 0 {
                    file.seek(io::SeekFrom::Start(offset))?;
                }
                let left = file.metadata()?.len().saturating_sub(offset);
                let want = usize::try_from(left)
                    .ok()
                    .filter(|&left| left <= SMALL_FILE)
                    .unwrap_or(0);
                first.reserve_exact(want);
                (&mut file).take(want as u64).read_to_end(&mut first)?;
                Ok((file, first))
            })
            .await?;
        Ok(Box::pin(Prefetched {
            // Nothing read ahead (a larger file): the one-byte buffer is freed here.
            first: if first.is_empty() {
                Bytes::new()
            } else {
                Bytes::from(first)
            },
            rest: crate::blocking_file::BlockingFile::new(std_file),
        }))
    }
}

fn file_info(meta: &std::fs::Metadata) -> FileInfo {
    FileInfo {
        size: meta.len(),
        modified: meta.modified().ok(),
        is_dir: meta.is_dir(),
    }
}

/// A buffer for file bytes, made on the calling (runtime worker) thread and only grown, with
/// `reserve_exact`, on the blocking thread that reads into it. glibc's `realloc` keeps a block
/// in the arena it came from, so the bytes a request sends live in the worker's arena, where
/// they are freed once sent. Allocated on the blocking thread,
/// each of the pool's threads (some 40 under 32 connections) kept its own arena holding 44–96
/// KB of them (`/static/4k.bin`, `wrk -c32`, `/proc/PID/smaps`). One byte: the allocator's
/// smallest block, never read from, so an empty answer costs next to nothing.
fn worker_buffer() -> Vec<u8> {
    Vec::with_capacity(1)
}

/// The most [`DirectorySource::reader`] reads along with opening the file: all of a file of
/// this size or smaller, nothing of a larger one.
const SMALL_FILE: usize = 64 * 1024;

/// A file whose bytes were read when it was opened (all of a small one, none of a larger
/// one): those first, then the rest from the file (positioned just past them).
struct Prefetched {
    first: Bytes,
    rest: crate::blocking_file::BlockingFile,
}

impl AsyncRead for Prefetched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        if self.first.is_empty() {
            return Pin::new(&mut self.rest).poll_read(cx, buf);
        }
        let n = self.first.len().min(buf.remaining());
        buf.put_slice(&self.first.split_to(n));
        if self.first.is_empty() {
            // Let go of the buffer itself, not only its bytes: a long file's stream lives on.
            self.first = Bytes::new();
        }
        std::task::Poll::Ready(Ok(()))
    }
}
