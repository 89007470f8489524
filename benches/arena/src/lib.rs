//! The framework's entry for HttpArena (github.com/MDA2AV/HttpArena), in its `production`
//! category: each profile's endpoint written as the guide tells a user to write it — a
//! controller with typed arguments, the framework's body reading, its compress middleware and
//! its static serve — and nothing a user would not write.
//!
//! The ports are in [`PORTS`]: the same app on each, speaking the HTTP versions and TLS the
//! profiles of that port ask for.
//!
//! | profile | endpoint | what it answers |
//! |---|---|---|
//! | `baseline`, `limited-conn` | `GET /baseline11?a=&b=`, `POST` with a number as the body | `a + b` (+ the body), `text/plain` |
//! | `pipelined` | `GET /pipeline` | `ok`, `text/plain` |
//! | `json`, `json-comp` | `GET /json/{count}?m=` | the first `count` items of the dataset, each with `total = price * quantity * m`, and `count`; compressed (brotli or gzip) when the client asks |
//! | `upload` | `POST /upload` | the number of body bytes read |
//! | `async-db` | `GET /async-db?min=&max=&limit=` | up to `limit` items of PostgreSQL's `items` priced between `min` and `max`, and `count` |
//! | `crud` | `GET /crud/items?category=&page=&limit=`, `GET`/`PUT /crud/items/{id}`, `POST /crud/items` | a page of a category; one item, cache-aside for 200 ms with `X-Cache: HIT`/`MISS`; an upsert (201); an update (200, 404) that invalidates the cached item |
//! | `static` | `GET /static/{file}` | the file, read from disk on every request, its `.br`/`.gz` sibling for a client that accepts it (`StaticServeConfig::precompressed_*`) |
//!
//! [`Settings::from_env`] reads where the data is (`/data/dataset.json` and `/data/static/`, as
//! the arena mounts them; `ARENA_DATASET` and `ARENA_STATIC` override each, for tests) and the
//! database (`DATABASE_URL`, `DATABASE_MAX_CONN`).

mod crud;
mod db;

use std::path::PathBuf;
use std::sync::Arc;

use framework::extract::Query;
use framework::middleware::compress::{Compress, CompressConfig};
use framework::middleware::static_serve::{DirectorySource, StaticServe, StaticServeConfig};
use framework::tls::Tls;
use framework::{
    App, Context, FromState, HttpError, HttpVersions, Result, ServerLimits, Service, Validate,
    controller,
};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};

/// The largest upload read: the arena's is 20 MiB.
pub const UPLOAD_LIMIT: usize = 32 * 1024 * 1024;

/// The largest number a baseline `POST` may carry as its body, in bytes.
const NUMBER_LIMIT: usize = 32;

pub use crud::{CACHED_ITEMS, ITEM_TTL, ItemCache};
pub use db::Database;

/// Where the entry finds its data.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The JSON array of items the `json` profile answers from.
    pub dataset: PathBuf,
    /// The folder the `static` profile serves.
    pub static_dir: PathBuf,
    /// The PostgreSQL database of the `async-db` profile (`DATABASE_URL`), if any.
    pub database_url: Option<String>,
    /// The size of its pool (`DATABASE_MAX_CONN`, 256 when unset, as the arena sets it).
    pub database_max_conn: u32,
    /// The TLS certificate chain and key (PEM) of ports 8081 and 8443; those ports are served
    /// when both files exist (the arena mounts them only for the profiles that use them).
    pub cert: PathBuf,
    /// The key of [`cert`](Self::cert).
    pub key: PathBuf,
}

impl Settings {
    /// The arena's paths, or `ARENA_DATASET` / `ARENA_STATIC` when set.
    pub fn from_env() -> Self {
        let path = |var: &str, default: &str| {
            std::env::var_os(var).map_or_else(|| PathBuf::from(default), PathBuf::from)
        };
        Self {
            dataset: path("ARENA_DATASET", "/data/dataset.json"),
            static_dir: path("ARENA_STATIC", "/data/static"),
            database_url: std::env::var("DATABASE_URL")
                .ok()
                .filter(|url| !url.is_empty()),
            database_max_conn: std::env::var("DATABASE_MAX_CONN")
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or(256),
            cert: path("ARENA_CERT", "/certs/server.crt"),
            key: path("ARENA_KEY", "/certs/server.key"),
        }
    }
}

/// One item of the dataset, as the file has it.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Item {
    id: i64,
    name: String,
    category: String,
    price: i64,
    quantity: i64,
    active: bool,
    tags: Vec<String>,
    rating: Rating,
}

/// An item's rating.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Rating {
    score: i64,
    count: i64,
}

/// The dataset, read once at start-up.
#[derive(Clone)]
pub struct Dataset(Arc<[Item]>);

impl Dataset {
    /// Reads the JSON array at `path`.
    pub fn load(path: &std::path::Path) -> std::io::Result<Self> {
        let text = std::fs::read(path)?;
        let items: Vec<Item> = serde_json::from_slice(&text)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        Ok(Self(items.into()))
    }
}

/// The `json` profile's answer: the first `count` items, each priced with the multiplier,
/// serialised for each request as it is sent (nothing is kept between requests).
pub struct Page {
    dataset: Dataset,
    count: usize,
    multiplier: i64,
}

/// An item with its `total`, borrowed from the dataset while the page is written.
#[derive(Serialize)]
struct Priced<'a> {
    id: i64,
    name: &'a str,
    category: &'a str,
    price: i64,
    quantity: i64,
    active: bool,
    tags: &'a [String],
    rating: &'a Rating,
    total: i64,
}

/// The page's items, as a JSON array.
struct Items<'a>(&'a Page);

impl Serialize for Items<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let page = self.0;
        serializer.collect_seq(page.dataset.0[..page.count].iter().map(|item| Priced {
            id: item.id,
            name: &item.name,
            category: &item.category,
            price: item.price,
            quantity: item.quantity,
            active: item.active,
            tags: &item.tags,
            rating: &item.rating,
            total: item.price * item.quantity * page.multiplier,
        }))
    }
}

impl Serialize for Page {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut page = serializer.serialize_struct("Page", 2)?;
        page.serialize_field("items", &Items(self))?;
        page.serialize_field("count", &self.count)?;
        page.end()
    }
}

/// `?a=&b=`: the two numbers a baseline request adds.
#[derive(Deserialize, Validate)]
struct Sum {
    a: i64,
    b: i64,
}

/// `?m=`: the `json` profile's multiplier, 1 when absent.
#[derive(Deserialize, Validate)]
struct Multiplier {
    #[serde(default = "one")]
    m: i64,
}

fn one() -> i64 {
    1
}

/// The profiles answered by handlers.
#[derive(FromState)]
struct Arena {
    dataset: Dataset,
}

#[controller]
impl Arena {
    /// `baseline`: the sum of the query's two numbers.
    #[get("/baseline11")]
    async fn sum(&self, sum: Query<Sum>) -> String {
        (sum.a + sum.b).to_string()
    }

    /// `baseline`: the sum of the query's two numbers and the number in the body (sent with a
    /// `Content-Length` or chunked, with or without a `Content-Type`).
    #[post("/baseline11")]
    async fn sum_with_body(&self, sum: Query<Sum>, ctx: &mut Context) -> Result<String> {
        let body = ctx
            .take_raw_body()
            .read_limited(NUMBER_LIMIT)
            .await
            .map_err(HttpError::from)?;
        let number: i64 = std::str::from_utf8(&body)
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .ok_or_else(|| HttpError::new("the body must be an integer").with_category("arena"))?;
        Ok((sum.a + sum.b + number).to_string())
    }

    /// `pipelined`.
    #[get("/pipeline")]
    async fn pipeline(&self) -> &'static str {
        "ok"
    }

    /// `json` and `json-comp`: the first `count` items (at most the dataset's), priced.
    #[get("/json/{count}")]
    async fn json(
        &self,
        count: usize,
        multiplier: Query<Multiplier>,
    ) -> framework::extract::Json<Page> {
        framework::extract::Json(Page {
            count: count.min(self.dataset.0.len()),
            dataset: self.dataset.clone(),
            multiplier: multiplier.m,
        })
    }

    /// `upload`: the number of bytes of the body, read whole (at most [`UPLOAD_LIMIT`]).
    #[post("/upload")]
    async fn upload(&self, ctx: &mut Context) -> Result<String> {
        let body = ctx
            .take_raw_body()
            .read_limited(UPLOAD_LIMIT)
            .await
            .map_err(HttpError::from)?;
        Ok(body.len().to_string())
    }
}

/// The ports the entry serves, each with the HTTP versions it speaks and whether over TLS:
/// 8080 HTTP/1.1 and h2c by prior knowledge (every HTTP/1.1 profile, and gRPC later), 8081
/// HTTP/1.1 over TLS (`json-tls`: ALPN `http/1.1` only), 8082 h2c only (`baseline-h2c`,
/// `json-h2c`: HTTP/1.1 refused), 8443 TLS with ALPN `h2` and `http/1.1` (`baseline-h2`,
/// `static-h2`).
pub const PORTS: [(u16, HttpVersions, bool); 4] = [
    (8080, HttpVersions::Both, false),
    (8081, HttpVersions::Http1Only, true),
    (8082, HttpVersions::Http2Only, false),
    (8443, HttpVersions::Both, true),
];

/// The service of one port: [`app`] speaking `versions`, over TLS with the settings'
/// certificate when `tls`.
pub fn service(settings: &Settings, versions: HttpVersions, tls: bool) -> std::io::Result<Service> {
    let mut app = app(settings)?.server_limits(ServerLimits::default().http_versions(versions));
    if tls {
        app = app.tls(
            Tls::from_pem_files(&settings.cert, &settings.key).map_err(std::io::Error::other)?,
        );
    }
    app.build().map_err(std::io::Error::other)
}

/// Whether the settings' certificate and key are there, so the TLS ports can be served.
pub fn has_certificate(settings: &Settings) -> bool {
    settings.cert.is_file() && settings.key.is_file()
}

/// The entry's app: the handlers, compression as the client asks, and the static files.
pub fn app(settings: &Settings) -> std::io::Result<App> {
    let dataset = Dataset::load(&settings.dataset)?;
    let database = Database::new(settings.database_url.as_deref(), settings.database_max_conn)
        .map_err(std::io::Error::other)?;
    let mut app = App::new()
        .use_middleware(Compress::new(CompressConfig::default()))
        .with_state(dataset)
        .with_state(database)
        .with_state(ItemCache::default())
        .mount_controllers();
    // The arena mounts the files only for the profiles that read them.
    if settings.static_dir.is_dir() {
        let files = StaticServe::new(
            DirectorySource::new(&settings.static_dir)?,
            StaticServeConfig::default()
                .precompressed_br(true)
                .precompressed_gzip(true),
        );
        app = app.endpoint(http::Method::GET, "/static/*", files);
    }
    Ok(app)
}
