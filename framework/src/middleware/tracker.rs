//! Tracks what submit routes received: the query, the route params and the JSON body, with
//! secrets masked, plus the outcome and latency, for an audit log.
//!
//! Keys matching the mask regex (default `(?i)password|token|secret`) have their value shown
//! as `***`, in the query, in the params and at any depth of the JSON body (inside nested
//! objects and arrays). String values longer than `max_string_len` characters (default 64)
//! are cut and end with `…`. The body is the one the body parser read, so put the tracker after
//! it (on the route or group, where submits are).
//!
//! `on_track` is called from a guard's `Drop` when the request is over, so it also runs after a
//! panic (result `fail`, error `panic`) or when the client went away (error `client closed
//! request`); it receives a [`TrackerInfo`] (request id, method, route, the masked data) and
//! the request's [`RequestView`], both owned, since the context may be gone. The default hook
//! emits a `tracing` info event.
//!
//! ```
//! use std::sync::Arc;
//! use framework::middleware::tracker::{Tracker, TrackerConfig};
//!
//! let tracker = Tracker::new(TrackerConfig::default()
//!     .on_track(Some(Arc::new(|info, request| {
//!         println!("{} {}", request.real_ip(), serde_json::to_string(info).unwrap());
//!     }))));
//! let app = framework::App::new().register_middleware("track", tracker);
//! # let _ = app;
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use regex::Regex;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::context::Context;
use crate::error::Result;
use crate::handler::{BoxFuture, Middleware, Next};
use crate::middleware::ConfigError;
use crate::view::RequestView;

/// The masked value.
pub const MASK: &str = "***";

/// How a tracked request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TrackResult {
    /// The chain returned `Ok`.
    Success,
    /// An error, a panic, or the client went away.
    Fail,
}

/// What a submit carried and how it ended.
#[derive(Debug, Clone, Serialize)]
pub struct TrackerInfo {
    /// The request id.
    pub request_id: String,
    /// Method.
    pub method: String,
    /// Route pattern.
    pub route: String,
    /// Query parameters, masked.
    pub query: Map<String, Value>,
    /// Route params, masked.
    pub params: Map<String, Value>,
    /// The JSON body, masked; `None` when there was none or it was not JSON.
    pub body: Option<Value>,
    /// Success or fail.
    pub result: TrackResult,
    /// The error's category and message on failure.
    pub error: Option<String>,
    /// Time in the chain.
    #[serde(serialize_with = "micros")]
    pub latency: Duration,
}

fn micros<S: serde::Serializer>(d: &Duration, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// Receives each tracked request.
pub type OnTrack = Arc<dyn Fn(&TrackerInfo, &RequestView) + Send + Sync>;

/// Which keys have their values masked: a regular expression (the `regex` crate's syntax)
/// matched anywhere in the key. Built from a pattern, so an app needs no `regex` dependency
/// of its own at a matching version.
#[derive(Clone, Debug)]
pub struct Mask(Regex);

impl Mask {
    /// Keys matching `pattern`, e.g. `(?i)password|token|secret|pin`; a pattern that does
    /// not compile is refused.
    pub fn new(pattern: &str) -> std::result::Result<Self, ConfigError> {
        Regex::new(pattern).map(Self).map_err(|e| {
            ConfigError::new("tracker", format!("mask `{pattern}`: {e}")).with_source(e)
        })
    }

    /// True when `key`'s value is masked.
    pub fn is_match(&self, key: &str) -> bool {
        self.0.is_match(key)
    }
}

/// `(?i)password|token|secret`.
impl Default for Mask {
    fn default() -> Self {
        // A constant pattern: it compiles.
        Self(Regex::new("(?i)password|token|secret").unwrap_or_else(|_| unreachable!()))
    }
}

/// Tracker settings.
#[derive(Clone)]
#[non_exhaustive]
pub struct TrackerConfig {
    /// The hook; default: a `tracing` info event with the info as JSON.
    pub on_track: Option<OnTrack>,
    /// Keys whose values are masked. Default `(?i)password|token|secret`.
    pub mask: Mask,
    /// Longer strings are cut to this many characters. Default 64.
    pub max_string_len: usize,
}

crate::config::setters!(TrackerConfig {
    on_track: Option<OnTrack>,
    mask: Mask,
    max_string_len: usize,
});

impl Default for TrackerConfig {
    fn default() -> Self {
        Self {
            on_track: None,
            mask: Mask::default(),
            max_string_len: 64,
        }
    }
}

/// The tracker middleware.
pub struct Tracker {
    config: Arc<TrackerConfig>,
}

/// Masks keys and cuts long strings, at any depth.
fn scrub(value: &mut Value, config: &TrackerConfig) {
    match value {
        Value::Object(map) => scrub_map(map, config),
        Value::Array(items) => items.iter_mut().for_each(|v| scrub(v, config)),
        Value::String(s) => cut(s, config.max_string_len),
        _ => {}
    }
}

fn scrub_map(map: &mut Map<String, Value>, config: &TrackerConfig) {
    for (key, value) in map.iter_mut() {
        if config.mask.is_match(key) {
            *value = Value::String(MASK.to_owned());
        } else {
            scrub(value, config);
        }
    }
}

fn cut(s: &mut String, max: usize) {
    if let Some((index, _)) = s.char_indices().nth(max) {
        s.truncate(index);
        s.push('…');
    }
}

struct Pending {
    config: Arc<TrackerConfig>,
    info: TrackerInfo,
    request: RequestView,
    started: Instant,
    finished: bool,
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.finished {
            self.info.result = TrackResult::Fail;
            self.info.error = Some(
                if std::thread::panicking() {
                    "panic"
                } else {
                    "client closed request"
                }
                .to_owned(),
            );
        }
        self.info.latency = self.started.elapsed();
        match &self.config.on_track {
            Some(hook) => hook(&self.info, &self.request),
            None => tracing::info!(
                target: "framework::tracker",
                request_id = self.info.request_id,
                info = %serde_json::to_string(&self.info).unwrap_or_default(),
                "tracked"
            ),
        }
    }
}

impl Tracker {
    /// A tracker with `config`.
    pub fn new(config: TrackerConfig) -> Self {
        Self {
            config: Arc::new(config),
        }
    }

    fn start(&self, ctx: &Context) -> Pending {
        let config = &*self.config;
        let mut query = Map::new();
        for (k, v) in form_urlencoded::parse(ctx.raw_query().as_bytes()) {
            query.insert(k.into_owned(), Value::String(v.into_owned()));
        }
        scrub_map(&mut query, config);
        let mut params = Map::new();
        for (k, v) in ctx.params().iter() {
            params.insert(k.to_owned(), Value::String(v.into_owned()));
        }
        scrub_map(&mut params, config);
        let mut body = serde_json::from_slice::<Value>(ctx.request_body()).ok();
        if let Some(body) = &mut body {
            scrub(body, config);
        }
        Pending {
            config: Arc::clone(&self.config),
            info: TrackerInfo {
                request_id: ctx.request_id().to_owned(),
                method: ctx.method().to_string(),
                route: ctx.route().map_or("", |route| route.pattern()).to_owned(),
                query,
                params,
                body,
                result: TrackResult::Success,
                error: None,
                latency: Duration::ZERO,
            },
            request: ctx.view(),
            started: Instant::now(),
            finished: false,
        }
    }
}

impl Middleware for Tracker {
    fn handle<'a>(&'a self, ctx: &'a mut Context, next: Next<'a>) -> BoxFuture<'a, Result> {
        Box::pin(async move {
            if ctx.is_committed() {
                return next.run(ctx).await;
            }
            let mut pending = self.start(ctx);
            let result = next.run(ctx).await;
            if let Err(err) = &result {
                pending.info.result = TrackResult::Fail;
                let category = err
                    .as_http()
                    .map_or(crate::error::DEFAULT_CATEGORY, |e| e.category());
                pending.info.error = Some(format!("{category}: {}", err.text()));
            }
            pending.finished = true;
            // As the logger: held until a streamed body ends, else reported now.
            if ctx.body().is_stream() {
                ctx.hold(pending);
            }
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_at_every_depth_and_cuts() {
        let config = TrackerConfig {
            max_string_len: 5,
            ..TrackerConfig::default()
        };
        let mut body = serde_json::json!({
            "user": {"password": "x", "list": [{"token": "y"}, {"name": "abcdefgh"}]},
            "Secret_Key": 1,
            "note": "héllo wörld"
        });
        scrub(&mut body, &config);
        assert_eq!(
            body,
            serde_json::json!({
                "user": {"password": "***", "list": [{"token": "***"}, {"name": "abcde…"}]},
                "Secret_Key": "***",
                "note": "héllo…"
            })
        );
    }
}
