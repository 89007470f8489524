//! The user service's avatar over real sockets, on each user store: memory, SQLite and (with
//! `TEST_DATABASE_URL`) PostgreSQL. A logged-in user uploads a PNG, JPEG or WebP image of at
//! most 1 MiB (`PUT /users/v1/me/avatar`, multipart); anyone reads it
//! (`GET /users/v1/avatar/{account}`) with a strong ETag, `Cache-Control`, 304 and ranges.
//! Refused: no login (401), a larger image or a second part (413), another format whatever its
//! `Content-Type` says (415), a body that is not multipart (415).

mod common;
/// Links the user service into this test only: its controllers register themselves.
#[path = "common/userflow.rs"]
mod userflow;

use reqwest::StatusCode;
use serde_json::{Value, json};
use user_service::Config;

use userflow::{Browser, PgSchema, proof, sha256_hex, start, test_key};

const BOUNDARY: &str = "avatar-test-boundary-x9Qm";
const MIB: usize = 1024 * 1024;

/// A multipart body of `(name, file name, content type, bytes)` parts.
fn form(parts: &[(&str, &str, &str, &[u8])]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, file_name, content_type, data) in parts {
        body.extend_from_slice(
            format!(
                "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"; \
                 filename=\"{file_name}\"\r\nContent-Type: {content_type}\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    body
}

/// `len` bytes starting with `magic`, the rest a pattern.
fn image(magic: &[u8], len: usize) -> Vec<u8> {
    let mut bytes = magic.to_vec();
    bytes.extend((bytes.len()..len).map(|i| (i % 251) as u8));
    bytes
}

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n";
const JPEG: &[u8] = &[0xFF, 0xD8, 0xFF, 0xE0];
const WEBP: &[u8] = b"RIFF\x00\x00\x10\x00WEBPVP8 ";

/// Registers `account` and logs it in; the browser then carries its session.
async fn logged_in(server: &common::Running, account: &str) -> Browser {
    let digest = sha256_hex(&format!("{account}-password"));
    let mut browser = Browser::default();
    assert_eq!(
        browser.register(server, account, &digest).await,
        StatusCode::CREATED
    );
    let token = browser.token(server).await;
    let (status, body) = browser
        .login(server, account, &proof(&digest, &token))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    browser
}

/// `PUT /users/v1/me/avatar` with `body` (multipart unless `content_type` says otherwise).
async fn put_avatar(
    browser: &mut Browser,
    server: &common::Running,
    content_type: &str,
    body: Vec<u8>,
) -> (StatusCode, Value) {
    let req = browser
        .http
        .put(server.url("/users/v1/me/avatar"))
        .header("content-type", content_type)
        .body(body);
    browser.send(req).await
}

fn multipart() -> String {
    format!("multipart/form-data; boundary={BOUNDARY}")
}

/// `GET /users/v1/avatar/{account}` with `headers`: status, headers and body.
async fn get_avatar(
    server: &common::Running,
    account: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, reqwest::header::HeaderMap, Vec<u8>) {
    let mut req = reqwest::Client::new().get(server.url(&format!("/users/v1/avatar/{account}")));
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let res = req.send().await.expect("request");
    let status = res.status();
    let headers = res.headers().clone();
    (status, headers, res.bytes().await.unwrap().to_vec())
}

/// Everything the avatar does, on the service `server` runs.
async fn avatar_round_trip(server: &common::Running) {
    let mut ann = logged_in(server, "AnnAvatar").await;

    // Nobody logged in: 401, before the body is looked at.
    let mut stranger = Browser::default();
    let png = image(PNG, 1000);
    let (status, body) = put_avatar(
        &mut stranger,
        server,
        &multipart(),
        form(&[("avatar", "me.png", "image/png", &png)]),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(body["message"], "log in to set an avatar");

    // No avatar yet: 404; a name that is no account name: 400.
    assert_eq!(
        get_avatar(server, "AnnAvatar", &[]).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        get_avatar(server, "a", &[]).await.0,
        StatusCode::BAD_REQUEST
    );

    // A PNG: stored, described, served with its validators.
    let (status, info) = put_avatar(
        &mut ann,
        server,
        &multipart(),
        form(&[("avatar", "me.png", "image/png", &png)]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{info}");
    let etag = info["etag"].as_str().unwrap().to_owned();
    assert_eq!(
        info,
        json!({"account": "AnnAvatar", "contentType": "image/png", "size": 1000,
               "etag": etag})
    );
    assert!(
        etag.starts_with("\"3e8-"),
        "a strong tag of 1000 bytes: {etag}"
    );
    // Read under any case of the name, as accounts are.
    let (status, headers, bytes) = get_avatar(server, "annavatar", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(bytes, png);
    assert_eq!(headers["content-type"], "image/png");
    assert_eq!(headers["content-length"], "1000");
    assert_eq!(headers["etag"], etag.as_str());
    assert_eq!(headers["cache-control"], "public, max-age=60");
    assert_eq!(headers["accept-ranges"], "bytes");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert!(headers.get("set-cookie").is_none(), "no session for a read");

    // Revalidation: 304 without a body; another tag: the image.
    let (status, headers, bytes) =
        get_avatar(server, "AnnAvatar", &[("if-none-match", &etag)]).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert!(bytes.is_empty());
    assert_eq!(headers["etag"], etag.as_str());
    let (status, _, _) = get_avatar(server, "AnnAvatar", &[("if-none-match", "\"other\"")]).await;
    assert_eq!(status, StatusCode::OK);

    // Ranges: one part (206), past the end (416), and an If-Range of another tag (the whole).
    let (status, headers, bytes) = get_avatar(server, "AnnAvatar", &[("range", "bytes=0-7")]).await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(headers["content-range"], "bytes 0-7/1000");
    assert_eq!(bytes, PNG);
    let (status, _, bytes) = get_avatar(server, "AnnAvatar", &[("range", "bytes=-10")]).await;
    assert_eq!(
        (status, bytes.as_slice()),
        (StatusCode::PARTIAL_CONTENT, &png[990..])
    );
    let (status, headers, _) = get_avatar(server, "AnnAvatar", &[("range", "bytes=1000-")]).await;
    assert_eq!(status, StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(headers["content-range"], "bytes */1000");
    let (status, _, bytes) = get_avatar(
        server,
        "AnnAvatar",
        &[("range", "bytes=0-7"), ("if-range", "\"other\"")],
    )
    .await;
    assert_eq!((status, bytes.len()), (StatusCode::OK, 1000));

    // Exactly 1 MiB, a JPEG sent as a plain field: it replaces the PNG, under a new tag.
    let jpeg = image(JPEG, MIB);
    let mut body =
        format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"avatar\"\r\n\r\n")
            .into_bytes();
    body.extend_from_slice(&jpeg);
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    let (status, info) = put_avatar(&mut ann, server, &multipart(), body).await;
    assert_eq!(status, StatusCode::OK, "{info}");
    assert_eq!(info["contentType"], "image/jpeg");
    assert_eq!(info["size"], MIB);
    let (status, headers, bytes) =
        get_avatar(server, "AnnAvatar", &[("if-none-match", &etag)]).await;
    assert_eq!(status, StatusCode::OK, "the old tag no longer matches");
    assert_eq!(headers["content-type"], "image/jpeg");
    assert_eq!(headers["etag"], info["etag"].as_str().unwrap());
    assert_eq!(bytes, jpeg);

    // One byte more: 413, naming the limit; nothing changes.
    let (status, body) = put_avatar(
        &mut ann,
        server,
        &multipart(),
        form(&[("avatar", "big.jpg", "image/jpeg", &image(JPEG, MIB + 1))]),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(body["category"], "framework-multipart");
    assert_eq!(
        body["message"],
        "multipart file part \"avatar\" exceeds the file size limit of 1048576 bytes"
    );
    // The whole form: at most 1 MiB + 16 KiB. An exactly 1 MiB image with an epilogue after
    // the closing boundary (which counts to the total, not to any part) up to the limit
    // passes; one byte more is refused, by its Content-Length.
    let total = MIB + 16 * 1024;
    let at_total = |extra: usize| {
        let mut body = form(&[("avatar", "a.jpg", "image/jpeg", &image(JPEG, MIB))]);
        let epilogue = total + extra - body.len();
        body.extend(std::iter::repeat_n(b'e', epilogue));
        body
    };
    let (status, info) = put_avatar(&mut ann, server, &multipart(), at_total(0)).await;
    assert_eq!(status, StatusCode::OK, "{info}");
    let (status, body) = put_avatar(&mut ann, server, &multipart(), at_total(1)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(
        body["message"],
        format!("multipart body exceeds the total size limit of {total} bytes")
    );
    // A second part: 413 (one part only).
    let (status, body) = put_avatar(
        &mut ann,
        server,
        &multipart(),
        form(&[
            ("avatar", "a.png", "image/png", &png),
            ("extra", "b.png", "image/png", &png),
        ]),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(
        body["message"],
        "multipart body exceeds the part count limit of 1 parts"
    );

    // The bytes decide, not the Content-Type: a GIF sent as PNG is 415, a WebP sent as
    // octet-stream is stored as WebP.
    let (status, body) = put_avatar(
        &mut ann,
        server,
        &multipart(),
        form(&[("avatar", "a.png", "image/png", b"GIF89a....")]),
    )
    .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{body}");
    assert_eq!(
        body,
        json!({"statusCode": 415, "category": "user",
               "message": "the avatar must be a PNG, JPEG or WebP image"})
    );
    let webp = image(WEBP, 300);
    let (status, info) = put_avatar(
        &mut ann,
        server,
        &multipart(),
        form(&[("avatar", "a.bin", "application/octet-stream", &webp)]),
    )
    .await;
    assert_eq!(
        (status, &info["contentType"]),
        (StatusCode::OK, &json!("image/webp"))
    );
    let (_, headers, bytes) = get_avatar(server, "AnnAvatar", &[]).await;
    assert_eq!(
        (&headers["content-type"], bytes),
        (&"image/webp".parse().unwrap(), webp)
    );

    // Not multipart at all: 415; a part of another name: 400.
    let (status, body) = put_avatar(&mut ann, server, "image/png", png.clone()).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{body}");
    assert_eq!(
        body["message"],
        "unsupported media type image/png: expected multipart/form-data"
    );
    let (status, body) = put_avatar(
        &mut ann,
        server,
        &multipart(),
        form(&[("picture", "a.png", "image/png", &png)]),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["message"], "the image goes in a part named avatar");
}

#[tokio::test]
async fn avatars_in_the_memory_store() {
    let config = Config {
        database_url: "memory".to_owned(),
        // Room for Ann's largest (1 MiB) and 200 bytes more.
        memory_avatar_bytes: MIB + 200,
        ..Config::default()
    };
    let server = start(&config).await;
    avatar_round_trip(&server).await;
    // Ann holds 300 bytes now: Bob's 1 MiB would pass the store's bound, 1500 bytes do not.
    let mut bob = logged_in(&server, "bob").await;
    let (status, body) = put_avatar(
        &mut bob,
        &server,
        &multipart(),
        form(&[("avatar", "b.png", "image/png", &image(PNG, MIB))]),
    )
    .await;
    assert_eq!(status, StatusCode::INSUFFICIENT_STORAGE, "{body}");
    assert_eq!(body["message"], "the avatar store is full");
    let (status, _) = put_avatar(
        &mut bob,
        &server,
        &multipart(),
        form(&[("avatar", "b.png", "image/png", &image(PNG, 1500))]),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn avatars_in_sqlite_and_across_a_restart() {
    let path = std::env::temp_dir().join(format!("{}.db", common::unique("avatars-")));
    let config = Config {
        database_url: format!("sqlite://{}?mode=rwc", path.display()),
        ..Config::default()
    };
    let server = start(&config).await;
    avatar_round_trip(&server).await;
    server.stop().await;
    // Still there after a restart, with the same tag.
    let server = start(&config).await;
    let (status, headers, bytes) = get_avatar(&server, "AnnAvatar", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "image/webp");
    assert_eq!(bytes, image(WEBP, 300));
    server.stop().await;
    for suffix in ["", "-wal", "-shm", ".key"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

#[tokio::test]
#[cfg_attr(
    no_test_database,
    ignore = "needs PostgreSQL: set TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test"
)]
async fn avatars_in_postgres() {
    let db = common::store_url("TEST_DATABASE_URL");
    let schema = PgSchema::create(&db).await;
    let config = Config {
        database_url: schema.url.clone(),
        store_key: Some(test_key()),
        ..Config::default()
    };
    let server = start(&config).await;
    avatar_round_trip(&server).await;
    server.stop().await;
    schema.drop_schema().await;
}
