//! A file read on tokio's blocking pool into a buffer that lives in the runtime worker's
//! memory: what [`DirectorySource`](crate::middleware::static_serve::DirectorySource) streams
//! a larger file from, and [`NamedFile`](crate::reply::NamedFile) every file.
//!
//! `tokio::fs::File` does the same job, but makes its buffer inside the blocking call, on
//! whichever pool thread runs the first read. glibc gives each such thread a malloc arena of
//! its own, and the buffers of many streams left every arena holding some 200–330 KB (32
//! connections reading a 1 MiB file, `/proc/PID/smaps`). Here the buffer is made (and, once,
//! grown) on the worker that polls the read, so it is allocated and freed in the worker's
//! arena; the blocking call only reads into room it was handed, with one `read` (as tokio's
//! does): `read_to_end` would have split each 64 KiB into reads of 8, 8, 16 and 32 KiB
//! (`strace`).

use std::io::{self, Read};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio::task::JoinHandle;

/// The most one read asks of the file: the chunk a file body asks for, so one read fills
/// one chunk.
const MAX_READ: usize = crate::body::READ_CHUNK;

/// A read's result: the file and the buffer back, and how many bytes were read into it.
type ReadDone = (std::fs::File, Vec<u8>, io::Result<usize>);

pub(crate) struct BlockingFile {
    state: State,
}

enum State {
    /// Waiting for the next read: `buf[pos..end]` was read and not yet handed out. The
    /// buffer is zeroed once, when it grows, and then only read into.
    Idle {
        file: std::fs::File,
        buf: Vec<u8>,
        pos: usize,
        end: usize,
    },
    /// A read is running on the blocking pool.
    Busy(JoinHandle<ReadDone>),
    /// A read failed or its task ended without an answer: every later read fails.
    Failed,
}

impl BlockingFile {
    /// Reads `file` from where it stands.
    pub(crate) fn new(file: std::fs::File) -> Self {
        Self {
            state: State::Idle {
                file,
                buf: Vec::new(),
                pos: 0,
                end: 0,
            },
        }
    }
}

impl AsyncRead for BlockingFile {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        dst: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            // Taken out and put back (a few words), so each arm owns what it holds.
            match std::mem::replace(&mut self.state, State::Failed) {
                State::Idle {
                    file,
                    buf,
                    mut pos,
                    end,
                } if pos < end || dst.remaining() == 0 => {
                    let n = (end - pos).min(dst.remaining());
                    dst.put_slice(&buf[pos..pos + n]);
                    pos += n;
                    self.state = State::Idle {
                        file,
                        buf,
                        pos,
                        end,
                    };
                    return Poll::Ready(Ok(()));
                }
                State::Idle {
                    mut file, mut buf, ..
                } => {
                    let want = dst.remaining().min(MAX_READ);
                    if buf.len() < want {
                        // Made or grown here, on the worker: see the module doc.
                        buf.resize(want, 0);
                    }
                    self.state = State::Busy(tokio::task::spawn_blocking(move || {
                        let read = loop {
                            match file.read(&mut buf[..want]) {
                                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                                read => break read,
                            }
                        };
                        (file, buf, read)
                    }));
                }
                State::Busy(mut task) => {
                    let done = match Pin::new(&mut task).poll(cx) {
                        Poll::Pending => {
                            self.state = State::Busy(task);
                            return Poll::Pending;
                        }
                        Poll::Ready(done) => done,
                    };
                    let (file, buf, read) = match done {
                        Ok(done) => done,
                        Err(gone) => return Poll::Ready(Err(io::Error::other(gone))),
                    };
                    let end = read?;
                    self.state = State::Idle {
                        file,
                        buf,
                        pos: 0,
                        end,
                    };
                    if end == 0 {
                        // Nothing left: a read of no bytes is the end of the file.
                        return Poll::Ready(Ok(()));
                    }
                }
                State::Failed => {
                    return Poll::Ready(Err(io::Error::other(
                        "an earlier read of this file failed",
                    )));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::BlockingFile;
    use tokio::io::AsyncReadExt;

    /// The file comes out whole and in order, whatever the size of the reads asking for it,
    /// from where it was positioned; then the end reads as no bytes.
    #[tokio::test]
    async fn reads_the_whole_file_from_its_position() {
        use std::io::{Seek, SeekFrom, Write};
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let path = std::env::temp_dir().join(format!("blocking-file-{}", std::process::id()));
        let mut file = std::fs::File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        file.write_all(&bytes).unwrap();
        for (start, chunk) in [(0, 100_000), (7, 1_000), (65_536, 65_536), (199_990, 1)] {
            file.seek(SeekFrom::Start(start as u64)).unwrap();
            let mut reader = BlockingFile::new(file.try_clone().unwrap());
            let mut out = Vec::new();
            let mut piece = vec![0u8; chunk];
            loop {
                let n = reader.read(&mut piece).await.unwrap();
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&piece[..n]);
            }
            assert_eq!(out, bytes[start..], "from {start} in reads of {chunk}");
            assert_eq!(
                reader.read(&mut piece).await.unwrap(),
                0,
                "still at the end"
            );
        }
    }

    /// A read error is the reader's error, and every read after it fails too.
    #[tokio::test]
    async fn a_failed_read_is_an_error_and_stays_one() {
        // A directory opens, but reading it fails (EISDIR).
        let dir = std::fs::File::open(std::env::temp_dir()).unwrap();
        let mut reader = BlockingFile::new(dir);
        let mut piece = [0u8; 16];
        assert!(reader.read(&mut piece).await.is_err());
        assert!(reader.read(&mut piece).await.is_err());
    }
}
