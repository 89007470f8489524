//! The API docs page (feature `docs-ui`): Swagger UI's files, served from the binary, and a
//! page and a script of our own that point it at the document, under a strict
//! `Content-Security-Policy`.

use serde_json::Value;

/// The docs page served at `page` for the document at `document`: its HTML and the script
/// that starts Swagger UI, served as `page/swagger-initializer.js` beside Swagger UI's own files
/// ([`docs_file`]). No inline script: the page works under a `Content-Security-Policy` whose
/// `script-src` is `'self'` ([`DOCS_CSP`]).
pub(crate) fn docs_page(page: &str, document: &str, title: &str) -> (String, String) {
    let title = html_escape::encode_safe(title);
    let html = format!(
        r#"<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>{title}: API docs</title>
  <link rel="stylesheet" href="{page}/swagger-ui.css">
  <link rel="stylesheet" href="{page}/index.css">
  <link rel="icon" type="image/png" href="{page}/favicon-32x32.png" sizes="32x32">
  <link rel="icon" type="image/png" href="{page}/favicon-16x16.png" sizes="16x16">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="{page}/swagger-ui-bundle.js"></script>
  <script src="{page}/swagger-ui-standalone-preset.js"></script>
  <script src="{page}/{DOCS_INITIALIZER}"></script>
</body>
</html>
"#
    );
    // `validatorUrl: "none"`: Swagger UI would otherwise load a badge from
    // validator.swagger.io; the page fetches nothing from outside the app.
    let script = format!(
        r##"window.onload = () => {{
  window.ui = SwaggerUIBundle({{
    url: {document},
    dom_id: "#swagger-ui",
    deepLinking: true,
    tryItOutEnabled: true,
    displayRequestDuration: true,
    validatorUrl: "none",
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: "StandaloneLayout",
  }});
}};
"##,
        document = Value::from(document),
    );
    (html, script)
}

/// The name of the docs page's own script, served beside Swagger UI's files.
pub(crate) const DOCS_INITIALIZER: &str = "swagger-initializer.js";

/// The docs page's `Content-Security-Policy`: scripts from the app only (no inline script),
/// Swagger UI's inline styles (its bundle applies some: without `'unsafe-inline'` the browser
/// test sees Chromium block them) and `data:` icons allowed, nothing from anywhere else. The
/// page sets it itself, so a stricter app-wide policy
/// ([`SecurityHeaders`](crate::middleware::security_headers)) leaves it alone.
pub(crate) const DOCS_CSP: &str = "default-src 'self'; img-src 'self' data:; \
                                   style-src 'self' 'unsafe-inline'; base-uri 'self'; \
                                   form-action 'self'; frame-ancestors 'none'; object-src 'none'";

/// The docs page's files: name, media type and bytes; the page's own script (`initializer`)
/// first, then Swagger UI's.
pub(crate) fn docs_files(
    initializer: String,
) -> impl Iterator<Item = (&'static str, &'static str, bytes::Bytes)> {
    let own = std::iter::once((
        DOCS_INITIALIZER,
        "text/javascript; charset=utf-8",
        bytes::Bytes::from(initializer),
    ));
    let swagger = swagger_ui_redist::SwaggerUi::static_files()
        .iter()
        .map(|(file, bytes)| {
            let name = file.file_name();
            let media = match name.rsplit('.').next() {
                Some("css") => "text/css; charset=utf-8",
                Some("js") => "text/javascript; charset=utf-8",
                Some("png") => "image/png",
                _ => "application/octet-stream",
            };
            (name, media, bytes::Bytes::from_static(bytes))
        });
    own.chain(swagger)
}
