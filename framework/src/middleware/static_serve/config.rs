//! [`StaticServeConfig`]: what a static mount serves and how.

use std::time::Duration;

/// Static serve settings.
#[derive(Clone)]
#[non_exhaustive]
pub struct StaticServeConfig {
    /// A folder inside the source that files are looked up under (`""`, the default, is the
    /// source's root). Handy to serve one folder of an embedded source.
    pub path: String,
    /// `Cache-Control: max-age` for clients. `None` (with no `s_max_age`): `no-cache`.
    pub max_age: Option<Duration>,
    /// `Cache-Control: s-maxage` for shared caches.
    pub s_max_age: Option<Duration>,
    /// Refuse requests that carry a query string (400), so a cache cannot be filled with
    /// `?1`, `?2`, … copies of one file.
    pub deny_query_string: bool,
    /// Send no `Last-Modified` (and ignore `If-Modified-Since`).
    pub disable_last_modified: bool,
    /// A strong ETag from the content instead of the weak size-and-mtime one.
    pub enable_strong_etag: bool,
    /// The file a directory serves. Default `index.html`; `None`: directories are 404.
    pub index: Option<String>,
    /// Serve names starting with `.`. Default false: they are 404.
    pub allow_dot_files: bool,
    /// When a file is missing, pass the request to the next handler instead of answering 404
    /// (only when used as middleware; as an endpoint there is nothing after it).
    pub not_found_next: bool,
    /// Serve `<file>.br` to clients that accept brotli, when it exists.
    pub precompressed_br: bool,
    /// Serve `<file>.gz` to clients that accept gzip, when it exists.
    pub precompressed_gzip: bool,
}

crate::config::setters!(StaticServeConfig {
    path => String,
    max_age: Option<Duration>,
    s_max_age: Option<Duration>,
    deny_query_string: bool,
    disable_last_modified: bool,
    enable_strong_etag: bool,
    index: Option<String>,
    allow_dot_files: bool,
    not_found_next: bool,
    precompressed_br: bool,
    precompressed_gzip: bool,
});

impl Default for StaticServeConfig {
    fn default() -> Self {
        Self {
            path: String::new(),
            max_age: None,
            s_max_age: None,
            deny_query_string: false,
            disable_last_modified: false,
            enable_strong_etag: false,
            index: Some("index.html".to_owned()),
            allow_dot_files: false,
            not_found_next: false,
            precompressed_br: false,
            precompressed_gzip: false,
        }
    }
}
