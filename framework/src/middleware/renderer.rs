//! Renders HTML pages from templates (`minijinja`, Jinja2 syntax): a handler answers with a
//! [`RenderData`] (the template's name and its data), returned or set as the body with
//! [`Content::set_value`](crate::context::Content::set_value), and the renderer turns it into the page.
//!
//! - Templates come from a directory (default `templates/`), read and parsed **once**, when the
//!   renderer is built: a syntax error stops the start-up instead of failing a request, and no
//!   request ever touches the file system. A template's name is its path below the directory
//!   with `/` separators (`users/show.html`). With `reload` (for development) the directory is
//!   read again for every render, so edits show without a restart.
//! - `.html`, `.htm`, `.xml` and `.tmpl` templates are HTML-escaped: `<script>` in the data
//!   comes out as `&lt;script&gt;`. Other names are rendered as they are.
//! - The output is `text/html; charset=utf-8` (a `Content-Type` the handler set is kept).
//! - A name that leaves the directory (`../secret`, an absolute path, a backslash) is refused,
//!   as is an unknown template or a failing render: **500**, category `framework-renderer`.
//!   The message names the template, never the data (the details go to the log).
//!
//! The renderer must run before the responder sees the answer: register it after the
//! responder (or on the routes that render), e.g. error handler, responder, renderer. A
//! `RenderData` that no renderer rendered is never sent as JSON: the responder fails to
//! marshal it (**500**), so template data cannot leak through a route without the renderer.
//!
//! ```no_run
//! use framework::middleware::renderer::{RenderData, Renderer, RendererConfig};
//! use framework::{Context, Result};
//!
//! async fn page(_ctx: &mut Context) -> Result<RenderData> {
//!     Ok(RenderData::new("hello.html", serde_json::json!({"name": "Ada"})))
//! }
//!
//! let renderer = Renderer::new(RendererConfig::default()).expect("templates load");
//! let app = framework::App::new()
//!     .use_middleware(renderer)
//!     .get("/", page);
//! # let _ = app;
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use http::header::CONTENT_TYPE;
use http::{HeaderValue, StatusCode};
use minijinja::{AutoEscape, Environment};

use crate::context::Context;
use crate::error::{HttpError, Result};
use crate::handler::{Before, Middleware};
use crate::middleware::ConfigError;
use crate::reply::Reply;

/// Category of failures.
pub const CATEGORY: &str = "framework-renderer";

/// A page to render: the template's name and the data it sees.
#[derive(Debug, Clone)]
pub struct RenderData {
    /// The template, relative to the template directory (`users/show.html`).
    pub file: String,
    /// The data; its top-level keys are the template's variables.
    pub data: serde_json::Value,
}

impl RenderData {
    /// A page from any serialisable data (a value that cannot be serialised renders as none).
    pub fn new(file: impl Into<String>, data: impl serde::Serialize) -> Self {
        Self {
            file: file.into(),
            data: serde_json::to_value(data).unwrap_or(serde_json::Value::Null),
        }
    }
}

/// A page is rendered, never marshalled: serialising one fails, so a route without the
/// renderer answers 500 (the responder's marshalling error) instead of sending the template's
/// data as JSON. Being `Serialize` is what lets a handler return it or set it as its body.
impl serde::Serialize for RenderData {
    fn serialize<S: serde::Serializer>(
        &self,
        _serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom(format!(
            "the page `{}` was not rendered: the renderer middleware is not on this route",
            self.file
        )))
    }
}

/// The page a handler answered with, taken out of the body; any other body is left alone.
fn take_page(ctx: &mut Context) -> Option<RenderData> {
    let is_page = match ctx.body().value() {
        Some(Reply::Value(value)) => {
            let any: &dyn std::any::Any = &**value;
            any.is::<RenderData>()
        }
        _ => false,
    };
    if !is_page {
        return None;
    }
    let Some(Reply::Value(value)) = ctx.body_mut().take_value() else {
        return None;
    };
    let value: Box<dyn std::any::Any> = value;
    value.downcast::<RenderData>().ok().map(|page| *page)
}

/// The renderer's settings.
#[derive(Clone)]
#[non_exhaustive]
pub struct RendererConfig {
    /// The template directory. Default `templates`.
    pub dir: PathBuf,
    /// Read the templates again for every render (development). Default false.
    pub reload: bool,
}

crate::config::setters!(RendererConfig {
    dir: PathBuf,
    reload: bool,
});

impl Default for RendererConfig {
    fn default() -> Self {
        Self {
            dir: PathBuf::from("templates"),
            reload: false,
        }
    }
}

/// The renderer.
pub struct Renderer {
    config: RendererConfig,
    env: Arc<Environment<'static>>,
}

fn escape_for(name: &str) -> AutoEscape {
    let escaped = [".html", ".htm", ".xml", ".tmpl"]
        .iter()
        .any(|ext| name.ends_with(ext));
    if escaped {
        AutoEscape::Html
    } else {
        AutoEscape::None
    }
}

/// Every file below `dir`, as (name with `/` separators, path).
fn template_files(dir: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    let mut found = Vec::new();
    let mut pending = vec![(dir.to_path_buf(), String::new())];
    while let Some((path, prefix)) = pending.pop() {
        for entry in std::fs::read_dir(&path)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let kind = entry.file_type()?;
            if kind.is_dir() {
                pending.push((entry.path(), format!("{prefix}{name}/")));
            } else if kind.is_file() {
                found.push((format!("{prefix}{name}"), entry.path()));
            }
        }
    }
    Ok(found)
}

/// Reads and parses every template below `dir`.
fn load(dir: &Path) -> std::result::Result<Environment<'static>, String> {
    let mut env = Environment::new();
    env.set_auto_escape_callback(escape_for);
    let files = template_files(dir)
        .map_err(|e| format!("template directory {} cannot be read: {e}", dir.display()))?;
    for (name, path) in files {
        let source = std::fs::read_to_string(&path)
            .map_err(|e| format!("template {} cannot be read: {e}", path.display()))?;
        env.add_template_owned(name.clone(), source)
            .map_err(|e| format!("template {name}: {e}"))?;
    }
    Ok(env)
}

/// True when `name` stays inside the template directory.
fn contained(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('/')
        && !name.contains('\\')
        && !name.contains('\0')
        && name
            .split('/')
            .all(|segment| segment != ".." && !segment.is_empty())
}

fn failure(message: String) -> HttpError {
    HttpError::with(StatusCode::INTERNAL_SERVER_ERROR, CATEGORY, message).with_exception(true)
}

impl Renderer {
    /// Loads every template of `config.dir`; fails naming the file that does not read or parse.
    pub fn new(config: RendererConfig) -> std::result::Result<Self, ConfigError> {
        let env = Arc::new(load(&config.dir).map_err(|m| {
            ConfigError::new("renderer", m).with_kind(super::ConfigErrorKind::Unreadable)
        })?);
        Ok(Self { config, env })
    }

    fn render(&self, page: &RenderData) -> std::result::Result<String, HttpError> {
        let name = &page.file;
        if !contained(name) {
            return Err(failure(format!(
                "template `{name}` is outside the template directory"
            )));
        }
        let env = if self.config.reload {
            Arc::new(load(&self.config.dir).map_err(|e| {
                tracing::error!(error = %e, "reloading templates failed");
                failure(format!("template `{name}` cannot be loaded"))
            })?)
        } else {
            Arc::clone(&self.env)
        };
        let template = env.get_template(name).map_err(|e| {
            if e.kind() == minijinja::ErrorKind::TemplateNotFound {
                failure(format!("template `{name}` not found"))
            } else {
                tracing::error!(error = %e, template = name, "loading a template failed");
                failure(format!("template `{name}` cannot be loaded"))
            }
        })?;
        template.render(&page.data).map_err(|e| {
            tracing::error!(error = %e, template = name, "rendering a template failed");
            failure(format!("rendering template `{name}` failed"))
        })
    }
}

/// Synchronous hooks: the page is rendered on the way out, from templates already in memory
/// (or read again with `reload`), with no future of the renderer's own.
impl Middleware for Renderer {
    fn role(&self) -> Option<crate::handler::Role> {
        Some(crate::handler::Role::Renderer)
    }

    fn before(&self, ctx: &mut Context) -> Before {
        Before::continue_unless_committed(ctx)
    }

    fn after(&self, ctx: &mut Context, result: Result) -> Result {
        result?;
        if ctx.is_committed() {
            return Ok(());
        }
        let Some(page) = take_page(ctx) else {
            return Ok(());
        };
        let html = self.render(&page)?;
        if ctx.response_header(CONTENT_TYPE).is_none() {
            ctx.set_response_header(
                CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            );
        }
        ctx.body_mut().set_bytes(html);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_inside() {
        for ok in ["a.html", "users/show.html", "x.y.tmpl"] {
            assert!(contained(ok), "{ok}");
        }
        for bad in [
            "",
            "../a",
            "a/../../b",
            "/etc/passwd",
            "a\\b",
            "a//b",
            "..",
            "a/..",
        ] {
            assert!(!contained(bad), "{bad}");
        }
    }

    #[test]
    fn escaping_by_extension() {
        assert_eq!(escape_for("a.html"), AutoEscape::Html);
        assert_eq!(escape_for("a.tmpl"), AutoEscape::Html);
        assert_eq!(escape_for("a.txt"), AutoEscape::None);
    }
}
