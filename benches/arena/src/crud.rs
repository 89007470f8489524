//! `crud`: a REST resource on PostgreSQL's `items`, its single-item reads cache-aside in
//! memory for 200 ms (`framework::middleware::cache::read_through`), said by `X-Cache: HIT` or
//! `MISS`, and invalidated when the item is written.

use std::sync::Arc;
use std::time::Duration;

use framework::extract::{Json, Query};
use framework::middleware::cache::{CacheStore, MemoryCacheStore, read_through};
use framework::reply::Created;
use framework::{Context, FromState, HttpError, Result, Validate, controller};
use http::HeaderValue;
use serde::{Deserialize, Serialize};

use crate::db::{Database, Item, Row, columns, unavailable};

/// How long a read item is served from the cache: an absolute TTL, not extended by reads.
pub const ITEM_TTL: Duration = Duration::from_millis(200);

/// The most items the cache holds (the arena reads ids 1 to 50 000); the least recently read
/// go first. Its bytes are bounded too (64 MiB, the memory store's default).
pub const CACHED_ITEMS: usize = 60_000;

/// The item cache: the framework's memory store.
#[derive(Clone)]
pub struct ItemCache(Arc<MemoryCacheStore>);

impl Default for ItemCache {
    fn default() -> Self {
        Self(Arc::new(MemoryCacheStore::with_bounds(
            CACHED_ITEMS,
            framework::middleware::cache::DEFAULT_MAX_BYTES,
        )))
    }
}

/// The cache key of item `id` (a number: `00042` and `42` are one item).
fn key(id: i32) -> String {
    format!("crud:item:{id}")
}

/// `?category=&page=&limit=`: `electronics`, page 1 and 10 items when absent; a limit outside
/// 1 to 50 is 10, a page below 1 is 1.
#[derive(Deserialize, Validate)]
struct ListQuery {
    #[serde(default = "electronics")]
    category: String,
    #[serde(default = "first_page")]
    page: i64,
    #[serde(default = "ten")]
    limit: i64,
}

fn electronics() -> String {
    "electronics".to_owned()
}

fn first_page() -> i64 {
    1
}

fn ten() -> i64 {
    10
}

/// A page of the list: its items, how many (`total`), and where it is.
#[derive(Serialize)]
struct ListPage {
    items: Vec<Item>,
    total: usize,
    page: i64,
    limit: i64,
}

/// A created (or replaced) item: the fields the client gives. The others start as `active`,
/// tagged `bench`, unrated.
#[derive(Debug, Clone, Deserialize, Serialize, Validate)]
struct NewItem {
    id: i32,
    #[validate(length(min = 1, max = 200))]
    name: String,
    #[validate(length(min = 1, max = 100))]
    category: String,
    price: i32,
    quantity: i32,
}

/// An item's new name, price, quantity and, when given, category.
#[derive(Debug, Deserialize, Validate)]
struct Change {
    #[validate(length(min = 1, max = 200))]
    name: String,
    #[serde(default)]
    category: Option<String>,
    price: i32,
    quantity: i32,
}

/// An updated item's fields.
#[derive(Debug, Serialize, sqlx::FromRow)]
struct Updated {
    id: i32,
    name: String,
    category: String,
    price: i32,
    quantity: i32,
}

/// The `crud` resource.
#[derive(FromState)]
struct Crud {
    database: Database,
    cache: ItemCache,
}

#[controller(prefix = "/crud/items")]
impl Crud {
    /// A page of a category's items, by id.
    #[get("/")]
    async fn list(&self, query: Query<ListQuery>) -> Result<Json<ListPage>> {
        let limit = if (1..=50).contains(&query.limit) {
            query.limit
        } else {
            10
        };
        let page = query.page.max(1);
        let rows: Vec<Row> = sqlx::query_as(concat!(
            "SELECT ",
            columns!(),
            " FROM items WHERE category = $1 ORDER BY id LIMIT $2 OFFSET $3"
        ))
        .bind(&query.category)
        .bind(limit)
        .bind((page - 1).saturating_mul(limit))
        .fetch_all(self.database.pool()?)
        .await
        .map_err(|err| unavailable(&err))?;
        let items: Vec<Item> = rows.into_iter().map(Item::from).collect();
        Ok(Json(ListPage {
            total: items.len(),
            items,
            page,
            limit,
        }))
    }

    /// One item, from the cache when it was read in the last 200 ms; 404 when there is none.
    #[get("/{id}")]
    async fn read(&self, id: i32, ctx: &mut Context) -> Result<Option<Json<Item>>> {
        let pool = self.database.pool()?;
        let found = read_through(&*self.cache.0, &key(id), ITEM_TTL, || async move {
            let row: Option<Row> =
                sqlx::query_as(concat!("SELECT ", columns!(), " FROM items WHERE id = $1"))
                    .bind(id)
                    .fetch_optional(pool)
                    .await
                    .map_err(|err| unavailable(&err))?;
            Ok(row.map(Item::from))
        })
        .await?;
        Ok(found.map(|(item, read)| {
            ctx.set_response_header(
                framework::middleware::cache::X_CACHE,
                HeaderValue::from_static(read.as_str()),
            );
            Json(item)
        }))
    }

    /// Creates the item, or replaces the one with its id: 201.
    #[post("/")]
    async fn create(&self, item: Json<NewItem>) -> Result<Created<NewItem>> {
        sqlx::query(
            "INSERT INTO items (id, name, category, price, quantity, active, tags, rating_score, \
             rating_count) VALUES ($1, $2, $3, $4, $5, true, '[\"bench\"]', 0, 0) \
             ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, category = EXCLUDED.category, \
             price = EXCLUDED.price, quantity = EXCLUDED.quantity",
        )
        .bind(item.id)
        .bind(&item.name)
        .bind(&item.category)
        .bind(item.price)
        .bind(item.quantity)
        .execute(self.database.pool()?)
        .await
        .map_err(|err| unavailable(&err))?;
        self.forget(item.id).await;
        Ok(Created(item.0))
    }

    /// Changes the item: 200 with its fields, 404 when there is none. Its cached copy goes.
    #[put("/{id}")]
    async fn update(&self, id: i32, change: Json<Change>) -> Result<Option<Json<Updated>>> {
        let updated: Option<Updated> = sqlx::query_as(
            "UPDATE items SET name = $2, price = $3, quantity = $4, \
             category = COALESCE($5, category) WHERE id = $1 \
             RETURNING id, name, category, price, quantity",
        )
        .bind(id)
        .bind(&change.name)
        .bind(change.price)
        .bind(change.quantity)
        .bind(change.category.as_deref())
        .fetch_optional(self.database.pool()?)
        .await
        .map_err(|err| unavailable(&err))?;
        self.forget(id).await;
        Ok(updated.map(Json))
    }
}

impl Crud {
    /// Drops item `id`'s cached copy (the memory store cannot fail).
    async fn forget(&self, id: i32) {
        if let Err(err) = self.cache.0.delete(&key(id)).await {
            let err: HttpError = err.into_http();
            eprintln!("arena: cache: {}", err.message());
        }
    }
}
