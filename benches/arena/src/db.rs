//! `async-db`: items whose price is in a range, read from PostgreSQL through a pool of
//! `DATABASE_MAX_CONN` connections (sqlx, the driver the user service uses).

use std::time::Duration;

use framework::extract::{Json, Query};
use framework::{FromState, HttpError, Validate, controller};
use serde::{Deserialize, Serialize};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

/// How long a request waits for a pooled connection, and how long its query may run
/// (PostgreSQL's `statement_timeout`): a database that is down or hung costs a request this,
/// not minutes.
const DEADLINE: Duration = Duration::from_secs(2);

/// The pool, when `DATABASE_URL` names a database. It connects lazily: the entry starts, and
/// answers its other profiles, whether PostgreSQL is up or not.
#[derive(Clone)]
pub struct Database(Option<PgPool>);

impl Database {
    /// A pool of at most `max_connections` to `url`, none when `url` is `None`.
    pub fn new(url: Option<&str>, max_connections: u32) -> Result<Self, sqlx::Error> {
        let Some(url) = url else {
            return Ok(Self(None));
        };
        let millis = DEADLINE.as_millis().to_string();
        let options: PgConnectOptions = url
            .parse::<PgConnectOptions>()?
            .options([("statement_timeout", millis.as_str())]);
        let pool = PgPoolOptions::new()
            .max_connections(max_connections.max(1))
            .acquire_timeout(DEADLINE)
            .connect_lazy_with(options);
        Ok(Self(Some(pool)))
    }

    pub(crate) fn pool(&self) -> Result<&PgPool, HttpError> {
        self.0.as_ref().ok_or_else(|| {
            HttpError::new("no database is configured (DATABASE_URL)")
                .with_status(http::StatusCode::SERVICE_UNAVAILABLE)
                .with_category("arena-db")
        })
    }
}

/// A failed query: 503, the driver's words in the log only.
pub(crate) fn unavailable(err: &sqlx::Error) -> HttpError {
    eprintln!("arena: database: {err}");
    HttpError::new("the database is unavailable")
        .with_status(http::StatusCode::SERVICE_UNAVAILABLE)
        .with_category("arena-db")
}

/// `?min=&max=&limit=`: the price range and how many rows, 10, 50 and 50 when absent; the
/// limit is kept within 1 to 50.
#[derive(Deserialize, Validate)]
struct Range {
    #[serde(default = "ten")]
    min: i32,
    #[serde(default = "fifty")]
    max: i32,
    #[serde(default = "fifty")]
    limit: i64,
}

fn ten() -> i32 {
    10
}

fn fifty<T: From<u8>>() -> T {
    T::from(50)
}

/// A row of `items`, as the database has it.
#[derive(sqlx::FromRow)]
pub(crate) struct Row {
    id: i32,
    name: String,
    category: String,
    price: i32,
    quantity: i32,
    active: bool,
    /// The JSONB array, as text.
    tags: String,
    rating_score: i32,
    rating_count: i32,
}

/// The columns a [`Row`] is read from, for `concat!` into a query written once.
macro_rules! columns {
    () => {
        "id, name, category, price, quantity, active, tags::text AS tags, rating_score, rating_count"
    };
}
pub(crate) use columns;

/// An item as the arena answers it: the dataset's shape, the rating nested.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Item {
    id: i32,
    name: String,
    category: String,
    price: i32,
    quantity: i32,
    active: bool,
    tags: serde_json::Value,
    rating: Rating,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Rating {
    score: i32,
    count: i32,
}

impl From<Row> for Item {
    fn from(row: Row) -> Self {
        Self {
            id: row.id,
            name: row.name,
            category: row.category,
            price: row.price,
            quantity: row.quantity,
            active: row.active,
            // PostgreSQL wrote it from a JSONB value: it is JSON.
            tags: serde_json::from_str(&row.tags).unwrap_or_default(),
            rating: Rating {
                score: row.rating_score,
                count: row.rating_count,
            },
        }
    }
}

/// The `async-db` answer.
#[derive(Serialize)]
struct Items {
    items: Vec<Item>,
    count: usize,
}

/// The profiles that read the database.
#[derive(FromState)]
struct Db {
    database: Database,
}

#[controller]
impl Db {
    /// `async-db`: up to `limit` items priced between `min` and `max`. No database, or one
    /// that does not answer within its deadline, is a 503 (HttpArena's page suggests an empty
    /// list, which would tell the client that no item matches).
    #[get("/async-db")]
    async fn async_db(&self, range: Query<Range>) -> framework::Result<Json<Items>> {
        let rows: Vec<Row> = sqlx::query_as(concat!(
            "SELECT ",
            columns!(),
            " FROM items WHERE price BETWEEN $1 AND $2 LIMIT $3"
        ))
        .bind(range.min)
        .bind(range.max)
        .bind(range.limit.clamp(1, 50))
        .fetch_all(self.database.pool()?)
        .await
        .map_err(|err| unavailable(&err))?;
        let items: Vec<Item> = rows.into_iter().map(Item::from).collect();
        Ok(Json(Items {
            count: items.len(),
            items,
        }))
    }
}
