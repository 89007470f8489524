//! File uploads: a `multipart/form-data` form whose file part is streamed to a temporary file,
//! kept under its SHA-256 (a name the server chooses, never the client's), and served back
//! with a strong ETag, 304 and ranges. Files of more than 1 MiB are refused with 413.
//!
//! ```sh
//! cargo run -p examples --example upload
//! curl -F 'file=@Cargo.toml' -F 'note=hello' http://127.0.0.1:3000/files
//! # {"id":"<sha-256>","fileName":"Cargo.toml","size":…,"note":"hello"}
//! curl -i http://127.0.0.1:3000/files/<id>                          # ETag, Cache-Control
//! curl -i -H 'range: bytes=0-9' http://127.0.0.1:3000/files/<id>    # 206
//! head -c 2000000 /dev/zero > big && curl -i -F 'file=@big' http://127.0.0.1:3000/files  # 413
//! ```

use std::path::PathBuf;

use framework::conditional::strong_etag;
use framework::multipart::{Multipart, MultipartLimits, MultipartParts, PartSpec};
use framework::representation::Representation;
use framework::{App, Context, HttpError, Result, controller};
use http::{HeaderValue, StatusCode};
use serde::Serialize;
use sha2::{Digest, Sha256};

/// The form: a file and an optional note, at most 1 MiB of file.
struct UploadForm;

impl MultipartParts for UploadForm {
    const PARTS: &'static [PartSpec] = &[PartSpec::file("file"), PartSpec::text("note").optional()];
    const LIMITS: Option<MultipartLimits> = Some(
        MultipartLimits::DEFAULT
            .parts(2)
            .file_size(1024 * 1024)
            .field_size(1024)
            .total_size(1024 * 1024 + 4096),
    );
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    id: String,
    file_name: Option<String>,
    size: u64,
    note: Option<String>,
}

/// Where the files are kept.
#[derive(Clone)]
struct Storage(PathBuf);

#[derive(framework::FromState)]
struct Files {
    storage: Storage,
}

#[controller(prefix = "/files")]
impl Files {
    /// Upload a file (and a note).
    #[post("/")]
    async fn upload(&self, mut form: Multipart<UploadForm>) -> Result<Stored> {
        let (mut stored, mut note) = (None, None);
        while let Some(part) = form.next_part().await? {
            match part.name() {
                "file" if part.is_file() => {
                    // Streamed to disk as it arrives; deleted unless persisted below.
                    let file = part.save_to_temp_in(&self.storage.0).await?;
                    let bytes = tokio::fs::read(file.path()).await?;
                    let id = hex::encode(Sha256::digest(&bytes));
                    let (file_name, size) = (file.file_name().map(str::to_owned), file.len());
                    file.persist(self.storage.0.join(&id)).await?;
                    stored = Some((id, file_name, size));
                }
                "note" => note = Some(part.text().await?),
                other => {
                    let message = format!("unexpected part {other:?}");
                    return Err(HttpError::new(message).into());
                }
            }
        }
        let Some((id, file_name, size)) = stored else {
            return Err(HttpError::new("the form has no file part").into());
        };
        Ok(Stored {
            id,
            file_name,
            size,
            note,
        })
    }

    /// A stored file, by its SHA-256.
    #[get("/{id}")]
    async fn download(&self, id: String, ctx: &mut Context) -> Result {
        // The id is the client's text: decoded as hex (64 digits), never sliced by position,
        // which would panic inside a multi-byte character.
        let mut digest = [0u8; 32];
        let not_found = || HttpError::with(StatusCode::NOT_FOUND, "files", "no such file");
        if hex::decode_to_slice(&id, &mut digest).is_err() {
            return Err(not_found().into());
        }
        let Ok(bytes) = tokio::fs::read(self.storage.0.join(&id)).await else {
            return Err(not_found().into());
        };
        Representation {
            content_type: HeaderValue::from_static("application/octet-stream"),
            size: bytes.len() as u64,
            etag: strong_etag(bytes.len() as u64, &digest),
            last_modified: None,
            cache_control: Some(HeaderValue::from_static("public, max-age=3600")),
            encoding: None,
        }
        .serve(ctx, bytes.into(), "files")?;
        Ok(())
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let dir = std::env::temp_dir().join("framework-example-uploads");
    std::fs::create_dir_all(&dir)?;
    let service = App::new()
        .with_state(Storage(dir))
        .build()
        .expect("valid routes");
    service.listen("127.0.0.1:3000").await
}
