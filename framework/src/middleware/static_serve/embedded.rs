//! Files compiled into the binary, through `rust-embed` (feature `static-embed`).

use std::collections::HashSet;
use std::io;
use std::marker::PhantomData;
use std::time::{Duration, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::Bytes;
use rust_embed::RustEmbed;

use super::source::{FileInfo, FileReader, FileSource, SourceError};

/// Files embedded with `#[derive(rust_embed::RustEmbed)]`.
///
/// ```ignore
/// #[derive(rust_embed::RustEmbed)]
/// #[folder = "assets/"]
/// struct Assets;
///
/// let source = framework::middleware::static_serve::EmbeddedSource::<Assets>::new();
/// ```
///
/// Nothing is read from disk at run time in release builds (rust-embed reads the folder in
/// debug builds unless its `debug-embed` feature is on). Content hashes come from rust-embed's
/// build-time SHA-256, so strong ETags cost nothing; modification times are the files' at build
/// time. The folder structure is known at construction, so directories serve their index.
pub struct EmbeddedSource<E> {
    dirs: HashSet<String>,
    embed: PhantomData<fn() -> E>,
}

impl<E: RustEmbed> Default for EmbeddedSource<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: RustEmbed> EmbeddedSource<E> {
    /// The embedded files of `E`.
    pub fn new() -> Self {
        let mut dirs = HashSet::new();
        dirs.insert(String::new());
        for file in E::iter() {
            let mut path = file.as_ref();
            while let Some((parent, _)) = path.rsplit_once('/') {
                dirs.insert(parent.to_owned());
                path = parent;
            }
        }
        Self {
            dirs,
            embed: PhantomData,
        }
    }

    fn file(file: &str) -> Result<rust_embed::EmbeddedFile, SourceError> {
        E::get(file).ok_or_else(|| SourceError::Io(io::ErrorKind::NotFound.into()))
    }
}

fn to_bytes(data: std::borrow::Cow<'static, [u8]>) -> Bytes {
    match data {
        std::borrow::Cow::Borrowed(b) => Bytes::from_static(b),
        std::borrow::Cow::Owned(v) => Bytes::from(v),
    }
}

#[async_trait]
impl<E: RustEmbed + Send + Sync + 'static> FileSource for EmbeddedSource<E> {
    async fn exists(&self, file: &str) -> bool {
        self.dirs.contains(file) || E::get(file).is_some()
    }

    async fn get(&self, file: &str) -> Result<Bytes, SourceError> {
        Ok(to_bytes(Self::file(file)?.data))
    }

    async fn stat(&self, file: &str) -> Result<Option<FileInfo>, SourceError> {
        if self.dirs.contains(file) {
            return Ok(Some(FileInfo {
                size: 0,
                modified: None,
                is_dir: true,
            }));
        }
        let found = Self::file(file)?;
        Ok(Some(FileInfo {
            size: found.data.len() as u64,
            modified: found
                .metadata
                .last_modified()
                .map(|secs| UNIX_EPOCH + Duration::from_secs(secs)),
            is_dir: false,
        }))
    }

    /// The metadata and always the bytes, whatever their size: they are in memory already,
    /// so sending them from there costs nothing and lets compress keep the file's compressed
    /// forms.
    async fn stat_with_bytes(
        &self,
        file: &str,
        up_to: u64,
    ) -> Result<Option<(FileInfo, Option<Bytes>)>, SourceError> {
        let _ = up_to;
        let Some(info) = self.stat(file).await? else {
            return Ok(None);
        };
        if info.is_dir {
            return Ok(Some((info, None)));
        }
        Ok(Some((info, Some(to_bytes(Self::file(file)?.data)))))
    }

    async fn reader(&self, file: &str, offset: u64) -> Result<FileReader, SourceError> {
        let data = to_bytes(Self::file(file)?.data);
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(data.len());
        Ok(Box::pin(io::Cursor::new(data.slice(start..))))
    }

    async fn content_hash(&self, file: &str) -> Option<[u8; 32]> {
        E::get(file).map(|f| f.metadata.sha256_hash())
    }
}
