//! The OpenAPI document of the app's controllers and its docs page: the settings
//! ([`App::openapi`], [`App::openapi_docs`], [`App::openapi_info`]) and the routes that serve
//! them, bytes made once at start-up.

use std::borrow::Cow;
use std::sync::Arc;

use http::Method;

use super::controllers::controller_doc_routes;
use super::{App, Group, Kind, RouteSpec};
use crate::context::Context;
use crate::error::BuildError;
use crate::handler::Endpoint;

impl App {
    /// Serves the OpenAPI 3.1 document of the app's controllers at `path` (`GET`, JSON), built
    /// once by [`build`](Self::build): see [`crate::openapi`]. The title and version are the
    /// ones given to [`openapi_info`](Self::openapi_info), by default `API` and `0.1.0`.
    #[must_use]
    pub fn openapi(mut self, path: &str) -> Self {
        let settings = self
            .scope
            .openapi
            .get_or_insert_with(OpenApiSettings::default);
        settings.path = path.to_owned();
        self
    }

    /// Serves an interactive page for the document at `path` (`GET`, e.g. `/docs`): Swagger
    /// UI, whose files are compiled into the binary (from the `swagger-ui-redist` crate, no
    /// download at build time, nothing fetched from a CDN at run time) and served under
    /// `path/` by one route, `path/*file` (`/docs/swagger-ui.css`, …), through
    /// [static serve](crate::middleware::static_serve): cached for a day, strong ETags and
    /// 304s, ranges, and each file marked static, so compress keeps its compressed forms
    /// instead of compressing the 1.4 MB bundle for every request; any other name is a 404.
    /// The page reads the document
    /// [`openapi`](Self::openapi) serves, and its "Try it out" sends real requests to the app.
    /// [`build`](Self::build) fails when no document is served. Needs the `docs-ui` feature.
    #[cfg(feature = "docs-ui")]
    #[must_use]
    pub fn openapi_docs(mut self, path: &str) -> Self {
        let settings = self
            .scope
            .openapi
            .get_or_insert_with(OpenApiSettings::default);
        settings.docs = Some(path.trim_end_matches('/').to_owned());
        self
    }

    /// The document's `info`: the API's title and version.
    #[must_use]
    pub fn openapi_info(mut self, title: &str, version: &str) -> Self {
        let settings = self
            .scope
            .openapi
            .get_or_insert_with(OpenApiSettings::default);
        settings.title = title.to_owned();
        settings.version = version.to_owned();
        self
    }

    /// The OpenAPI document of the app's controllers (as [`openapi`](Self::openapi) serves
    /// it), without building a service or serving anything: for a command that prints it.
    pub fn openapi_document(&self) -> Vec<u8> {
        let settings = self.scope.openapi.clone().unwrap_or_default();
        crate::openapi::document(
            &settings.title,
            &settings.version,
            &controller_doc_routes(self),
        )
    }

    /// The routes of the OpenAPI document and of its docs page.
    pub(super) fn openapi_routes(&self, settings: &OpenApiSettings) -> Result<Group, BuildError> {
        let mut routes = Vec::new();
        let fixed = |path: String, handler: &'static str, endpoint: FixedEndpoint| RouteSpec {
            method: Method::GET,
            path,
            handler: Cow::Borrowed(handler),
            owner: Cow::Borrowed("App::openapi"),
            middleware: Vec::new(),
            endpoint: Arc::new(endpoint),
            kind: Kind::Endpoint,
        };
        if !settings.path.is_empty() {
            let document = crate::openapi::document(
                &settings.title,
                &settings.version,
                &controller_doc_routes(self),
            );
            routes.push(fixed(
                settings.path.clone(),
                "framework::openapi",
                FixedEndpoint {
                    body: document.into(),
                    content_type: http::HeaderValue::from_static("application/json"),
                    cache_control: None,
                    csp: None,
                },
            ));
        }
        #[cfg(feature = "docs-ui")]
        if let Some(docs) = &settings.docs {
            if settings.path.is_empty() {
                return Err(BuildError::Setting {
                    setting: "App::openapi_docs",
                    message: "the page shows the document App::openapi serves, and none is \
                              served"
                        .to_owned(),
                });
            }
            let (page, script) = crate::openapi::docs_page(docs, &settings.path, &settings.title);
            routes.push(fixed(
                if docs.is_empty() {
                    "/".to_owned()
                } else {
                    docs.clone()
                },
                "framework::openapi_docs",
                FixedEndpoint {
                    body: page.into(),
                    content_type: http::HeaderValue::from_static("text/html; charset=utf-8"),
                    cache_control: Some(http::HeaderValue::from_static("no-cache")),
                    csp: Some(http::HeaderValue::from_static(crate::openapi::DOCS_CSP)),
                },
            ));
            let page =
                http::HeaderValue::try_from(docs.as_str()).map_err(|_| BuildError::Setting {
                    setting: "App::openapi_docs",
                    message: format!("`{docs}` is not a valid path"),
                })?;
            let files = DocsFiles::new(crate::openapi::docs_files(script), page);
            routes.push(RouteSpec {
                method: Method::GET,
                path: format!("{docs}/*file"),
                handler: Cow::Borrowed("framework::openapi_docs"),
                owner: Cow::Borrowed("App::openapi"),
                middleware: Vec::new(),
                endpoint: Arc::new(files),
                kind: Kind::Endpoint,
            });
        }
        let mut group = Group::new("");
        group.routes = routes;
        Ok(group)
    }
}

/// The OpenAPI document's place and `info`, and the docs page's place.
#[derive(Clone)]
pub(super) struct OpenApiSettings {
    path: String,
    title: String,
    version: String,
    /// Where [`App::openapi_docs`] serves the page (without a trailing `/`), if it does.
    #[cfg_attr(not(feature = "docs-ui"), allow(dead_code))]
    docs: Option<String>,
}

impl Default for OpenApiSettings {
    fn default() -> Self {
        OpenApiSettings {
            path: String::new(),
            title: "API".to_owned(),
            version: "0.1.0".to_owned(),
            docs: None,
        }
    }
}

/// Serves bytes made at start-up: the OpenAPI document and the docs page.
struct FixedEndpoint {
    body: bytes::Bytes,
    content_type: http::HeaderValue,
    cache_control: Option<http::HeaderValue>,
    /// The page's own `Content-Security-Policy`.
    csp: Option<http::HeaderValue>,
}

impl Endpoint for FixedEndpoint {
    fn call<'a>(&'a self, ctx: &'a mut Context) -> crate::handler::EndpointFuture<'a> {
        crate::handler::endpoint_future(async move {
            ctx.set_response_header(http::header::CONTENT_TYPE, self.content_type.clone());
            if let Some(cache_control) = &self.cache_control {
                ctx.set_response_header(http::header::CACHE_CONTROL, cache_control.clone());
            }
            if let Some(csp) = &self.csp {
                ctx.set_response_header(http::header::CONTENT_SECURITY_POLICY, csp.clone());
            }
            ctx.body_mut().set_bytes(self.body.clone());
            Ok(())
        })
    }
}

/// The files of the docs page, by name (`*file`): Swagger UI's and the page's own script; any
/// other name is a 404. Each is cached for a day and has a strong ETag (SHA-256, computed
/// when first asked for), answered 304 when the client has it, and is marked
/// [`StaticBody`](crate::body::StaticBody): compress keeps its compressed forms instead of
/// compressing the 1.4 MB bundle for every request.
#[cfg(feature = "docs-ui")]
struct DocsFiles {
    files: Vec<DocsFile>,
    /// The page's path, where `<page>/` (no file) is sent: a permanent redirect.
    page: http::HeaderValue,
}

#[cfg(feature = "docs-ui")]
struct DocsFile {
    name: &'static str,
    media: http::HeaderValue,
    bytes: bytes::Bytes,
    digest: std::sync::OnceLock<[u8; 32]>,
}

#[cfg(feature = "docs-ui")]
impl DocsFiles {
    fn new(
        files: impl Iterator<Item = (&'static str, &'static str, bytes::Bytes)>,
        page: http::HeaderValue,
    ) -> Self {
        Self {
            page,
            files: files
                .map(|(name, media, bytes)| DocsFile {
                    name,
                    media: http::HeaderValue::from_static(media),
                    bytes,
                    digest: std::sync::OnceLock::new(),
                })
                .collect(),
        }
    }
}

#[cfg(feature = "docs-ui")]
impl Endpoint for DocsFiles {
    fn call<'a>(&'a self, ctx: &'a mut Context) -> crate::handler::EndpointFuture<'a> {
        use crate::conditional::{Precondition, Represents};
        use sha2::Digest;
        crate::handler::endpoint_future(async move {
            let name = ctx.param("file").unwrap_or_default();
            if name.is_empty() {
                // `/docs/` is the page at `/docs`: where a hand-typed address often ends.
                ctx.set_status(http::StatusCode::PERMANENT_REDIRECT);
                ctx.set_response_header(http::header::LOCATION, self.page.clone());
                return Ok(());
            }
            // The first of a name wins: the page's own script before Swagger UI's.
            let Some(file) = self.files.iter().find(|file| file.name == name) else {
                return Err(crate::HttpError::with(
                    http::StatusCode::NOT_FOUND,
                    "openapi",
                    "no such file of the docs page",
                )
                .into());
            };
            let digest = file
                .digest
                .get_or_init(|| sha2::Sha256::digest(&file.bytes).into());
            let etag = crate::conditional::strong_etag(file.bytes.len() as u64, digest);
            let precondition = crate::conditional::evaluate(
                ctx.method(),
                ctx.request_headers(),
                etag.to_str().ok(),
                None,
            );
            let headers = ctx.response_headers_mut();
            headers.insert(http::header::ETAG, etag);
            headers.insert(
                http::header::CACHE_CONTROL,
                http::HeaderValue::from_static("public, max-age=86400"),
            );
            match precondition {
                Precondition::Proceed => {}
                Precondition::NotModified => {
                    ctx.extensions_mut().insert(Represents {
                        content_type: Some(file.media.clone()),
                        length: file.bytes.len() as u64,
                    });
                    ctx.set_status(http::StatusCode::NOT_MODIFIED);
                    return Ok(());
                }
                Precondition::Failed => {
                    return Err(crate::HttpError::with(
                        http::StatusCode::PRECONDITION_FAILED,
                        "openapi",
                        "precondition failed",
                    )
                    .into());
                }
            }
            ctx.set_response_header(http::header::CONTENT_TYPE, file.media.clone());
            ctx.extensions_mut()
                .insert(crate::body::StaticBody::new(digest, &file.bytes));
            ctx.body_mut().set_bytes(file.bytes.clone());
            Ok(())
        })
    }
}
