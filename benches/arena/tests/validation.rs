//! HttpArena's validation rules for the profiles the entry enters (its `scripts/validate.sh`,
//! read from the repository: facts, not code), run against the started entry over real
//! sockets. The data is made here, in the arena's format: a dataset of 50 items and the 20
//! static files with their sizes and `.gz`/`.br` siblings.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rand::Rng;
use serde_json::{Value, json};

/// The arena's static files: name and size in bytes.
const STATIC_FILES: [(&str, usize); 20] = [
    ("reset.css", 8192),
    ("layout.css", 25600),
    ("theme.css", 18432),
    ("components.css", 204_800),
    ("utilities.css", 61440),
    ("analytics.js", 12288),
    ("helpers.js", 22528),
    ("app.js", 204_800),
    ("vendor.js", 307_200),
    ("router.js", 35840),
    ("header.html", 122_880),
    ("footer.html", 56320),
    ("logo.svg", 15344),
    ("icon-sprite.svg", 71680),
    ("manifest.json", 2883),
    ("regular.woff2", 18432),
    ("bold.woff2", 22528),
    ("hero.webp", 46080),
    ("thumb1.webp", 8192),
    ("thumb2.webp", 6144),
];

const CATEGORIES: [&str; 10] = [
    "electronics",
    "tools",
    "garden",
    "kitchen",
    "sports",
    "toys",
    "books",
    "office",
    "music",
    "health",
];

/// The entry, started on a port of its own, and the data it serves.
struct Entry {
    addr: SocketAddr,
    dataset: Vec<Value>,
    static_dir: PathBuf,
    /// The test's folder, removed when the test ends.
    root: PathBuf,
}

impl Drop for Entry {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

impl Entry {
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

/// A folder of this test's own (the tests of this file run at once, in one process).
fn scratch(name: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("arena-{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// 50 items in the dataset's shape, ids 1 to 50, integer prices, quantities and ratings.
fn make_dataset(path: &Path) -> Vec<Value> {
    let mut rng = rand::rng();
    let items: Vec<Value> = (1..=50)
        .map(|id| {
            let tags = &["sale", "popular"][..(id as usize % 2) + 1];
            json!({
                "id": id,
                "name": format!("Item {id}"),
                "category": CATEGORIES[(id as usize - 1) / 5],
                "price": rng.random_range(1..=500),
                "quantity": rng.random_range(1..=1000),
                "active": id % 3 != 0,
                "tags": tags,
                "rating": {"score": rng.random_range(1..=50), "count": rng.random_range(1..=500)},
            })
        })
        .collect();
    std::fs::write(path, serde_json::to_vec(&items).unwrap()).unwrap();
    items
}

/// The 20 files with their sizes: text for the text types, random bytes for fonts and
/// images; a `.gz` and a `.br` sibling of each text file, as the arena ships them.
fn make_static(dir: &Path) {
    let mut rng = rand::rng();
    for (name, size) in STATIC_FILES {
        let binary = name.ends_with(".woff2") || name.ends_with(".webp");
        let bytes: Vec<u8> = if binary {
            (0..size).map(|_| rng.random()).collect()
        } else {
            let line = format!(
                "/* {name}: rule {{ color: #{:06x}; }} */\n",
                rng.random_range(0..0xffffff)
            );
            line.bytes().cycle().take(size).collect()
        };
        std::fs::write(dir.join(name), &bytes).unwrap();
        if !binary {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            gz.write_all(&bytes).unwrap();
            std::fs::write(dir.join(format!("{name}.gz")), gz.finish().unwrap()).unwrap();
            let mut br = Vec::new();
            brotli::BrotliCompress(
                &mut &bytes[..],
                &mut br,
                &brotli::enc::BrotliEncoderParams {
                    quality: 5,
                    ..Default::default()
                },
            )
            .unwrap();
            std::fs::write(dir.join(format!("{name}.br")), br).unwrap();
        }
    }
}

async fn start() -> Entry {
    start_with_database(None).await
}

async fn start_with_database(database_url: Option<String>) -> Entry {
    let dir = scratch("data");
    let dataset_path = dir.join("dataset.json");
    let dataset = make_dataset(&dataset_path);
    let static_dir = dir.join("static");
    std::fs::create_dir_all(&static_dir).unwrap();
    make_static(&static_dir);
    let settings = arena::Settings {
        dataset: dataset_path,
        static_dir: static_dir.clone(),
        database_url,
        database_max_conn: 8,
        cert: dir.join("absent.crt"),
        key: dir.join("absent.key"),
    };
    let service = arena::app(&settings).unwrap().build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { service.serve(listener).await });
    Entry {
        addr,
        dataset,
        static_dir,
        root: dir,
    }
}

/// A client that asks for no compression and decompresses nothing.
fn plain_client() -> reqwest::Client {
    reqwest::Client::builder().no_gzip().build().unwrap()
}

/// A raw exchange: `parts` written one by one, 30 ms apart, with `TCP_NODELAY`, then
/// everything read until the server closes (at most 5 s): the arena's fragmentation cases.
fn raw_exchange(addr: SocketAddr, parts: &[&[u8]]) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_nodelay(true).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(30));
        }
        stream.write_all(part).unwrap();
    }
    let mut out = Vec::new();
    stream
        .read_to_end(&mut out)
        .expect("the server closes the connection after the response (Connection: close)");
    out
}

/// The responses in `raw`, in order: status and body, framed by `Content-Length` or chunked.
fn parse_responses(mut raw: &[u8]) -> Vec<(u16, String)> {
    let mut out = Vec::new();
    while !raw.is_empty() {
        let end = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("a complete head");
        let head = std::str::from_utf8(&raw[..end])
            .unwrap()
            .to_ascii_lowercase();
        raw = &raw[end + 4..];
        let status: u16 = head[9..12].parse().unwrap();
        let header = |name: &str| {
            head.lines()
                .find_map(|l| l.strip_prefix(&format!("{name}: ")).map(str::to_owned))
        };
        let body = if let Some(len) = header("content-length") {
            let len: usize = len.trim().parse().unwrap();
            let body = raw[..len].to_vec();
            raw = &raw[len..];
            body
        } else {
            assert_eq!(
                header("transfer-encoding").as_deref(),
                Some("chunked"),
                "{head}"
            );
            let mut body = Vec::new();
            loop {
                let line_end = raw.windows(2).position(|w| w == b"\r\n").unwrap();
                let size = usize::from_str_radix(
                    std::str::from_utf8(&raw[..line_end]).unwrap().trim(),
                    16,
                )
                .unwrap();
                raw = &raw[line_end + 2..];
                if size == 0 {
                    raw = &raw[2..];
                    break;
                }
                body.extend_from_slice(&raw[..size]);
                raw = &raw[size + 2..];
            }
            body
        };
        out.push((status, String::from_utf8(body).unwrap()));
    }
    out
}

fn content_type(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

/// `baseline` and `limited-conn`: the twelve checks.
#[tokio::test]
async fn baseline_answers_sums_whatever_the_framing() {
    let entry = start().await;
    let client = plain_client();
    let get = client
        .get(entry.url("/baseline11?a=13&b=42"))
        .send()
        .await
        .unwrap();
    assert!(
        content_type(&get).starts_with("text/plain"),
        "{}",
        content_type(&get)
    );
    assert_eq!(get.text().await.unwrap(), "55");
    let post = client
        .post(entry.url("/baseline11?a=13&b=42"))
        .header("content-type", "text/plain")
        .body("20")
        .send()
        .await
        .unwrap();
    assert!(content_type(&post).starts_with("text/plain"));
    assert_eq!(post.text().await.unwrap(), "75");

    // Chunked, and without a Content-Type (as the load generator sends it).
    let addr = entry.addr;
    let chunked = tokio::task::spawn_blocking(move || {
        raw_exchange(addr, &[b"POST /baseline11?a=13&b=42 HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n2\r\n20\r\n0\r\n\r\n"])
    })
    .await
    .unwrap();
    assert_eq!(parse_responses(&chunked), [(200, "75".to_owned())]);

    // Random parameters, and two different bodies in a row: nothing is cached.
    let (a, b) = (
        rand::rng().random_range(100..1000),
        rand::rng().random_range(100..1000),
    );
    let random = client
        .get(entry.url(&format!("/baseline11?a={a}&b={b}")))
        .send()
        .await
        .unwrap();
    assert_eq!(random.text().await.unwrap(), (a + b).to_string());
    let first: i64 = rand::rng().random_range(100..1000);
    let second = if first == 999 { 100 } else { first + 1 };
    for body in [first, second] {
        let answer = client
            .post(entry.url("/baseline11?a=13&b=42"))
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(answer.text().await.unwrap(), (55 + body).to_string());
    }

    // The load generator's zero-padded numbers are numbers.
    let padded = client
        .get(entry.url("/baseline11?a=013&b=0042"))
        .send()
        .await
        .unwrap();
    assert_eq!(padded.text().await.unwrap(), "55");

    // TCP fragmentation: the request line split, each header alone, the body apart, the body
    // byte by byte.
    let cases: [(&[&[u8]], &str); 4] = [
        (
            &[b"GET /baseli", b"ne11?a=13&b=42 HTTP/1.1\r\n", b"Host: localhost\r\nConnection: close\r\n\r\n"],
            "55",
        ),
        (
            &[
                b"GET /baseline11?a=13&b=42 HTTP/1.1\r\n",
                b"Host: localhost\r\n",
                b"User-Agent: arena-frag/1.0\r\n",
                b"Connection: close\r\n\r\n",
            ],
            "55",
        ),
        (
            &[
                b"POST /baseline11?a=13&b=42 HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nConnection: close\r\n\r\n",
                b"20",
            ],
            "75",
        ),
        (
            &[
                b"POST /baseline11?a=13&b=42 HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nConnection: close\r\n\r\n",
                b"2",
                b"0",
            ],
            "75",
        ),
    ];
    for (parts, expected) in cases {
        let parts: Vec<Vec<u8>> = parts.iter().map(|p| p.to_vec()).collect();
        let raw = tokio::task::spawn_blocking(move || {
            let parts: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
            raw_exchange(addr, &parts)
        })
        .await
        .unwrap();
        assert_eq!(parse_responses(&raw), [(200, expected.to_owned())]);
    }

    // A body that is no number is a 400, not a panic or a 500.
    let bad = client
        .post(entry.url("/baseline11?a=1&b=2"))
        .body("twenty")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
}

/// `pipelined`: 16 requests written at once on one connection come back in their order.
#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    let entry = start().await;
    let addr = entry.addr;
    let raw = tokio::task::spawn_blocking(move || {
        let mut batch = Vec::new();
        for i in 0..16 {
            let target = if i % 2 == 0 {
                "/pipeline".to_owned()
            } else {
                format!("/baseline11?a={i}&b=0")
            };
            let close = if i == 15 { "Connection: close\r\n" } else { "" };
            batch.extend_from_slice(
                format!("GET {target} HTTP/1.1\r\nHost: localhost:8080\r\n{close}\r\n").as_bytes(),
            );
        }
        raw_exchange(addr, &[&batch])
    })
    .await
    .unwrap();
    let answers = parse_responses(&raw);
    let expected: Vec<(u16, String)> = (0..16)
        .map(|i| {
            (
                200,
                if i % 2 == 0 {
                    "ok".to_owned()
                } else {
                    i.to_string()
                },
            )
        })
        .collect();
    assert_eq!(answers, expected);
    let one = plain_client()
        .get(entry.url("/pipeline"))
        .send()
        .await
        .unwrap();
    assert!(content_type(&one).starts_with("text/plain"));
}

/// `json`: the first `count` items, each with its exact total, and `count`; a body unique to
/// each multiplier.
#[tokio::test]
async fn json_prices_the_first_items_with_the_multiplier() {
    let entry = start().await;
    let client = plain_client();
    let mut bodies = std::collections::HashSet::new();
    for (count, m) in [(12, 3), (22, 7), (31, 2), (50, 5), (50, 6)] {
        let answer = client
            .get(entry.url(&format!("/json/{count}?m={m}")))
            .send()
            .await
            .unwrap();
        assert!(answer.headers().get("content-encoding").is_none());
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["count"], count);
        let items = body["items"].as_array().unwrap();
        assert_eq!(items.len(), count);
        for (item, source) in items.iter().zip(&entry.dataset) {
            let total =
                source["price"].as_i64().unwrap() * source["quantity"].as_i64().unwrap() * m;
            let mut expected = source.clone();
            expected["total"] = json!(total);
            assert_eq!(item, &expected);
        }
        assert!(bodies.insert(body.to_string()), "a body per (count, m)");
    }
    let typed = client.get(entry.url("/json/50?m=1")).send().await.unwrap();
    assert!(content_type(&typed).starts_with("application/json"));
    // Without `m`, the multiplier is 1.
    let plain: Value = client
        .get(entry.url("/json/1"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let first = &entry.dataset[0];
    assert_eq!(
        plain["items"][0]["total"].as_i64(),
        Some(first["price"].as_i64().unwrap() * first["quantity"].as_i64().unwrap())
    );
}

fn decode(encoding: &str, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match encoding {
        "gzip" => {
            flate2::read::GzDecoder::new(bytes)
                .read_to_end(&mut out)
                .unwrap();
        }
        "br" => {
            brotli::BrotliDecompress(&mut &bytes[..], &mut out).unwrap();
        }
        other => panic!("unexpected encoding {other}"),
    }
    out
}

/// `json-comp`: compressed when asked (gzip or brotli), plain when not.
#[tokio::test]
async fn json_is_compressed_only_when_the_client_asks() {
    let entry = start().await;
    let client = plain_client();
    for (count, m) in [(50, 1), (25, 3), (40, 7), (50, 2)] {
        let answer = client
            .get(entry.url(&format!("/json/{count}?m={m}")))
            .header("accept-encoding", "gzip, br")
            .send()
            .await
            .unwrap();
        assert!(content_type(&answer).starts_with("application/json"));
        let encoding = answer.headers()["content-encoding"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(encoding == "gzip" || encoding == "br", "{encoding}");
        let body: Value =
            serde_json::from_slice(&decode(&encoding, &answer.bytes().await.unwrap())).unwrap();
        assert_eq!(body["count"], count);
        for (item, source) in body["items"].as_array().unwrap().iter().zip(&entry.dataset) {
            let total =
                source["price"].as_i64().unwrap() * source["quantity"].as_i64().unwrap() * m;
            assert_eq!(item["total"], total);
        }
    }
    let gzip_only = client
        .get(entry.url("/json/50?m=1"))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(gzip_only.headers()["content-encoding"], "gzip");
    let plain = client.get(entry.url("/json/50?m=1")).send().await.unwrap();
    assert!(plain.headers().get("content-encoding").is_none());
}

/// `upload`: the number of bytes read, for small, random and large bodies, sent with a
/// `Content-Length` or chunked; past the limit a 413.
#[tokio::test]
async fn upload_counts_the_bytes_it_reads() {
    let entry = start().await;
    let client = plain_client();
    let hello = client
        .post(entry.url("/upload"))
        .header("content-type", "application/octet-stream")
        .body("Hello, HttpArena!")
        .send()
        .await
        .unwrap();
    assert!(content_type(&hello).starts_with("text/plain"));
    assert_eq!(hello.text().await.unwrap(), "17");
    let mut rng = rand::rng();
    let random: String = (0..48)
        .map(|_| {
            let chars = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            chars[rng.random_range(0..chars.len())] as char
        })
        .collect();
    let answer = client
        .post(entry.url("/upload"))
        .body(random)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.text().await.unwrap(), "48");
    for size in [512_000, 2_097_152, 10_485_760, 20_971_520] {
        let body: Vec<u8> = (0..size).map(|_| rng.random()).collect();
        let answer = client
            .post(entry.url("/upload"))
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        assert_eq!(answer.text().await.unwrap(), size.to_string());
    }
    // Chunked: parts with no declared length, written apart.
    let addr = entry.addr;
    let raw = tokio::task::spawn_blocking(move || {
        let chunk = format!("{:x}\r\n{}\r\n", 100_000, "7".repeat(100_000));
        let mut parts: Vec<Vec<u8>> = vec![
            b"POST /upload HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec(),
        ];
        parts.extend((0..8).map(|_| chunk.clone().into_bytes()));
        parts.push(b"0\r\n\r\n".to_vec());
        let parts: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        raw_exchange(addr, &parts)
    })
    .await
    .unwrap();
    assert_eq!(parse_responses(&raw), [(200, "800000".to_owned())]);
    // One byte past the limit is refused.
    let over = client
        .post(entry.url("/upload"))
        .body(vec![0u8; arena::UPLOAD_LIMIT + 1])
        .send()
        .await
        .unwrap();
    assert_eq!(over.status(), 413);
    let at = client
        .post(entry.url("/upload"))
        .body(vec![0u8; arena::UPLOAD_LIMIT])
        .send()
        .await
        .unwrap();
    assert_eq!(at.text().await.unwrap(), arena::UPLOAD_LIMIT.to_string());
}

/// `static`: every file whole without compression, decompressing to itself with it, the
/// types the arena checks, and a 404.
#[tokio::test]
async fn static_files_are_served_whole_typed_and_compressed_when_asked() {
    let entry = start().await;
    let client = plain_client();
    for (name, expected) in [
        ("reset.css", "text/css"),
        ("app.js", "javascript"),
        ("manifest.json", "application/json"),
    ] {
        let answer = client
            .get(entry.url(&format!("/static/{name}")))
            .send()
            .await
            .unwrap();
        let ty = content_type(&answer);
        assert!(ty.contains(expected), "{name}: {ty}");
    }
    let mut compressed = 0;
    for (name, size) in STATIC_FILES {
        let on_disk = std::fs::read(entry.static_dir.join(name)).unwrap();
        assert_eq!(on_disk.len(), size);
        let plain = client
            .get(entry.url(&format!("/static/{name}")))
            .send()
            .await
            .unwrap();
        assert_eq!(plain.status(), 200, "{name}");
        assert!(plain.headers().get("content-encoding").is_none(), "{name}");
        assert_eq!(plain.bytes().await.unwrap(), on_disk, "{name}");
        let asked = client
            .get(entry.url(&format!("/static/{name}")))
            .header("accept-encoding", "br;q=1, gzip;q=0.8")
            .send()
            .await
            .unwrap();
        let encoding = asked
            .headers()
            .get("content-encoding")
            .map(|v| v.to_str().unwrap().to_owned());
        let bytes = asked.bytes().await.unwrap();
        match encoding {
            Some(encoding) => {
                compressed += 1;
                assert_eq!(decode(&encoding, &bytes), on_disk, "{name} as {encoding}");
            }
            None => assert_eq!(bytes, on_disk, "{name}"),
        }
    }
    assert!(
        compressed >= 15,
        "the text files are sent compressed: {compressed}"
    );
    let missing = client
        .get(entry.url("/static/nonexistent.txt"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
}

/// A schema of this run's own holding the arena's `items` table with `rows` rows of its
/// shape (prices 1 to 500, one of the ten categories, a JSONB array of tags, a rating), and
/// the database URL that reads it (its `search_path`). `None` without `TEST_DATABASE_URL`.
async fn items_database(rows: i32) -> Option<(String, sqlx::PgPool, Dropped)> {
    let Ok(base) = std::env::var("TEST_DATABASE_URL") else {
        eprintln!("skipped: TEST_DATABASE_URL is not set");
        return None;
    };
    let schema = format!(
        "arena_{}_{}",
        std::process::id(),
        rand::rng().random::<u32>()
    );
    let admin = sqlx::PgPool::connect(&base).await.unwrap();
    sqlx::query(&format!("CREATE SCHEMA {schema}"))
        .execute(&admin)
        .await
        .unwrap();
    let separator = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{separator}options=-c%20search_path%3D{schema}");
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    sqlx::query(
        "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL, \
         price INTEGER NOT NULL, quantity INTEGER NOT NULL, active BOOLEAN NOT NULL, \
         tags JSONB NOT NULL, rating_score INTEGER NOT NULL, rating_count INTEGER NOT NULL)",
    )
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO items SELECT i, 'Item ' || i, \
         (ARRAY['electronics','tools','garden','kitchen','sports','toys','books','office','music','health'])[1 + i % 10], \
         1 + (i * 7919) % 500, 1 + (i * 104729) % 1000, i % 3 <> 0, \
         (ARRAY['[\"sale\"]','[\"sale\",\"popular\"]','[\"new\",\"heavy-duty\",\"popular\"]'])[1 + i % 3]::jsonb, \
         1 + i % 50, 1 + i % 500 FROM generate_series(1, $1) AS i",
    )
    .bind(rows)
    .execute(&pool)
    .await
    .unwrap();
    Some((url, pool, Dropped { admin, schema }))
}

/// The test's schema, dropped when the test ends.
struct Dropped {
    admin: sqlx::PgPool,
    schema: String,
}

impl Dropped {
    async fn drop_schema(self) {
        sqlx::query(&format!("DROP SCHEMA {} CASCADE", self.schema))
            .execute(&self.admin)
            .await
            .unwrap();
    }
}

/// `async-db`: `count` rows of the range, each of the table's values in the dataset's shape;
/// a range no row is in answers none.
#[tokio::test]
async fn async_db_reads_the_range_from_postgres() {
    let Some((url, pool, schema)) = items_database(5000).await else {
        return;
    };
    let entry = start_with_database(Some(url)).await;
    let client = plain_client();
    for (min, max, limit) in [(5, 80, 7), (20, 150, 18), (100, 400, 33), (10, 50, 50)] {
        let answer = client
            .get(entry.url(&format!("/async-db?min={min}&max={max}&limit={limit}")))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        assert!(content_type(&answer).starts_with("application/json"));
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["count"], limit);
        let items = body["items"].as_array().unwrap();
        assert_eq!(items.len(), limit);
        for item in items {
            let id = item["id"].as_i64().unwrap() as i32;
            let (name, price, active, tags, score, count): (String, i32, bool, String, i32, i32) =
                sqlx::query_as(
                    "SELECT name, price, active, tags::text, rating_score, rating_count \
                     FROM items WHERE id = $1",
                )
                .bind(id)
                .fetch_one(&pool)
                .await
                .unwrap();
            assert!((min..=max).contains(&price), "{item}");
            assert_eq!(item["name"], name);
            assert_eq!(item["price"], price);
            assert_eq!(item["active"], active);
            assert_eq!(item["tags"], serde_json::from_str::<Value>(&tags).unwrap());
            assert_eq!(item["rating"], json!({"score": score, "count": count}));
        }
    }
    // A limit past 50 is 50; none in the range is none.
    let many: Value = client
        .get(entry.url("/async-db?min=1&max=500&limit=500"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(many["count"], 50);
    let none: Value = client
        .get(entry.url("/async-db?min=9999&max=9999&limit=50"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(none, json!({"items": [], "count": 0}));
    pool.close().await;
    schema.drop_schema().await;
}

/// Without a database the profile answers 503 within its deadline, and the others still work.
#[tokio::test]
async fn async_db_without_a_database_is_a_503() {
    let entry = start_with_database(Some("postgres://nobody@127.0.0.1:1/none".to_owned())).await;
    let client = plain_client();
    let answer = client.get(entry.url("/async-db")).send().await.unwrap();
    assert_eq!(answer.status(), 503);
    let json = client.get(entry.url("/json/1?m=1")).send().await.unwrap();
    assert_eq!(json.status(), 200);
}

/// `crud`: the arena's seven checks (a page, a read, MISS then HIT, a 404, a create, its read,
/// an update that invalidates), the TTL, zero-padded ids and an update of nothing.
#[tokio::test]
async fn crud_reads_through_a_cache_that_writes_invalidate() {
    let Some((url, pool, schema)) = items_database(5000).await else {
        return;
    };
    let entry = start_with_database(Some(url)).await;
    let client = plain_client();
    let page: Value = client
        .get(entry.url("/crud/items?category=electronics&page=1&limit=5"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 5);
    assert_eq!(
        (page["total"].clone(), page["page"].clone()),
        (json!(5), json!(1))
    );
    assert!(
        items
            .iter()
            .all(|item| item["rating"].is_object() && item["category"] == "electronics")
    );
    let ids: Vec<i64> = items.iter().map(|i| i["id"].as_i64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "by id: {ids:?}");
    let second: Value = client
        .get(entry.url("/crud/items?category=electronics&page=02&limit=5"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(second["items"][0]["id"].as_i64().unwrap() > *ids.last().unwrap());

    let read = |path: &str| {
        let request = client.get(entry.url(path));
        async move {
            let answer = request.send().await.unwrap();
            let cache = answer
                .headers()
                .get("x-cache")
                .map(|v| v.to_str().unwrap().to_owned());
            (
                answer.status().as_u16(),
                cache,
                answer.json::<Value>().await.ok(),
            )
        }
    };
    let (status, _, one) = read("/crud/items/1").await;
    assert_eq!((status, one.unwrap()["id"].clone()), (200, json!(1)));
    let (_, first, body) = read("/crud/items/42").await;
    assert_eq!(first.as_deref(), Some("MISS"));
    let (_, again, cached) = read("/crud/items/00042").await;
    assert_eq!(
        again.as_deref(),
        Some("HIT"),
        "a zero-padded id is the same item"
    );
    assert_eq!(body, cached);
    tokio::time::sleep(arena::ITEM_TTL + std::time::Duration::from_millis(100)).await;
    let (_, expired, _) = read("/crud/items/42").await;
    assert_eq!(
        expired.as_deref(),
        Some("MISS"),
        "past its TTL the item is read again"
    );
    let (missing, _, _) = read("/crud/items/999999").await;
    assert_eq!(missing, 404);

    let created = client
        .post(entry.url("/crud/items"))
        .json(&json!({"id": 200001, "name": "ValidateItem", "category": "test", "price": 42, "quantity": 7}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let (_, _, made) = read("/crud/items/200001").await;
    let made = made.unwrap();
    assert_eq!(
        (made["id"].clone(), made["name"].clone()),
        (json!(200001), json!("ValidateItem"))
    );
    let (_, warm, _) = read("/crud/items/200001").await;
    assert_eq!(warm.as_deref(), Some("HIT"));
    let updated = client
        .put(entry.url("/crud/items/200001"))
        .json(&json!({"name": "UpdatedItem", "category": "test", "price": 99, "quantity": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(updated.status(), 200);
    assert_eq!(
        updated.json::<Value>().await.unwrap(),
        json!({"id": 200001, "name": "UpdatedItem", "category": "test", "price": 99, "quantity": 1})
    );
    let (_, after, fresh) = read("/crud/items/200001").await;
    assert_eq!(
        after.as_deref(),
        Some("MISS"),
        "the update invalidated the cached item"
    );
    assert_eq!(fresh.unwrap()["price"], 99);
    let nothing = client
        .put(entry.url("/crud/items/300000"))
        .json(&json!({"name": "Nobody", "price": 1, "quantity": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(nothing.status(), 404);
    let bad = client
        .post(entry.url("/crud/items"))
        .json(&json!({"id": 1, "name": "", "category": "test", "price": 1, "quantity": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    pool.close().await;
    schema.drop_schema().await;
}

/// The four ports' services on ports of their own, with a certificate made here for
/// `localhost`: the address of each, in `arena::PORTS`'s order, and the certificate's PEM.
async fn start_ports() -> (Entry, Vec<SocketAddr>, String) {
    let entry = start().await;
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert_pem = certified.cert.pem();
    let settings = arena::Settings {
        dataset: entry.root.join("dataset.json"),
        static_dir: entry.static_dir.clone(),
        database_url: None,
        database_max_conn: 1,
        cert: entry.root.join("server.crt"),
        key: entry.root.join("server.key"),
    };
    std::fs::write(&settings.cert, &cert_pem).unwrap();
    std::fs::write(&settings.key, certified.key_pair.serialize_pem()).unwrap();
    assert!(arena::has_certificate(&settings));
    let mut addrs = Vec::new();
    for (_, versions, tls) in arena::PORTS {
        let service = arena::service(&settings, versions, tls).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        addrs.push(listener.local_addr().unwrap());
        tokio::spawn(async move { service.serve(listener).await });
    }
    (entry, addrs, cert_pem)
}

/// A TLS client trusting only `cert_pem`, offering h2 and HTTP/1.1.
fn tls_client(cert_pem: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(cert_pem.as_bytes()).unwrap())
        .no_gzip()
        .build()
        .unwrap()
}

/// Checks a `/json/{count}?m=` answer against the dataset.
async fn assert_priced(answer: reqwest::Response, dataset: &[Value], count: usize, m: i64) {
    assert!(content_type(&answer).starts_with("application/json"));
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["count"], count);
    let items = body["items"].as_array().unwrap();
    assert_eq!(items.len(), count);
    for (item, source) in items.iter().zip(dataset) {
        let total = source["price"].as_i64().unwrap() * source["quantity"].as_i64().unwrap() * m;
        assert_eq!(item["total"], total);
    }
}

/// `json-tls` (8081: HTTP/1.1 over TLS, whatever the client offers), `baseline-h2` and
/// `static-h2` (8443: h2 by ALPN), `baseline-h2c` and `json-h2c` (8082: h2c by prior
/// knowledge, HTTP/1.1 refused).
#[tokio::test]
async fn the_tls_and_http2_ports_speak_what_their_profiles_ask() {
    let (entry, addrs, cert_pem) = start_ports().await;
    let (tls1, h2c, tls2) = (addrs[1], addrs[2], addrs[3]);
    let client = tls_client(&cert_pem);

    for (count, m) in [(7, 2), (23, 11), (50, 1)] {
        let answer = client
            .get(format!(
                "https://localhost:{}/json/{count}?m={m}",
                tls1.port()
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(
            answer.version(),
            reqwest::Version::HTTP_11,
            "json-tls is HTTP/1.1"
        );
        assert_priced(answer, &entry.dataset, count, m).await;
    }

    let sum = client
        .get(format!(
            "https://localhost:{}/baseline11?a=1&b=1",
            tls2.port()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(sum.version(), reqwest::Version::HTTP_2);
    assert_eq!(sum.text().await.unwrap(), "2");
    for (name, ty) in [
        ("reset.css", "text/css"),
        ("app.js", "javascript"),
        ("hero.webp", "image/webp"),
    ] {
        let file = client
            .get(format!("https://localhost:{}/static/{name}", tls2.port()))
            .send()
            .await
            .unwrap();
        assert_eq!(file.version(), reqwest::Version::HTTP_2);
        assert!(
            content_type(&file).contains(ty),
            "{name}: {}",
            content_type(&file)
        );
        let on_disk = std::fs::read(entry.static_dir.join(name)).unwrap();
        assert_eq!(file.bytes().await.unwrap(), on_disk, "{name}");
    }
    let missing = client
        .get(format!(
            "https://localhost:{}/static/nonexistent.txt",
            tls2.port()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);

    let prior = reqwest::Client::builder()
        .http2_prior_knowledge()
        .no_gzip()
        .build()
        .unwrap();
    let sum = prior
        .get(format!("http://{h2c}/baseline11?a=13&b=42"))
        .send()
        .await
        .unwrap();
    assert_eq!(sum.version(), reqwest::Version::HTTP_2);
    assert_eq!(sum.text().await.unwrap(), "55");
    let json = prior
        .get(format!("http://{h2c}/json/5?m=3"))
        .send()
        .await
        .unwrap();
    assert_priced(json, &entry.dataset, 5, 3).await;
    assert!(
        plain_client()
            .get(format!("http://{h2c}/baseline11?a=1&b=1"))
            .send()
            .await
            .is_err(),
        "the h2c port refuses HTTP/1.1"
    );
    // The main port speaks both.
    let both = prior
        .get(format!("http://{}/pipeline", addrs[0]))
        .send()
        .await
        .unwrap();
    assert_eq!(both.text().await.unwrap(), "ok");
}
