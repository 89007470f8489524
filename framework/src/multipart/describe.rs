//! What the OpenAPI document says of a route that takes a [`Multipart`](super::Multipart).

use serde_json::{Map, Value, json};

use super::{MULTIPART_FORM_DATA, MultipartLimits};
use crate::openapi::Operation;

/// The parts a `Multipart<P>` expects, for the OpenAPI document, and optionally its limits.
///
/// ```
/// use framework::multipart::{MultipartLimits, MultipartParts, PartSpec};
///
/// /// A profile picture and its caption.
/// struct PictureForm;
///
/// impl MultipartParts for PictureForm {
///     const PARTS: &'static [PartSpec] = &[
///         PartSpec::file("picture").content_type("image/png, image/jpeg"),
///         PartSpec::text("caption").optional(),
///     ];
///     const LIMITS: Option<MultipartLimits> = Some(MultipartLimits::DEFAULT
///         .parts(2)
///         .file_size(1024 * 1024));
/// }
/// ```
///
/// A handler takes `form: Multipart<PictureForm>`. The description is for clients: the
/// handler still reads the parts as they come and decides what to accept.
pub trait MultipartParts: 'static {
    /// The parts, in the order a client should send them. Empty: any parts, each described
    /// as binary.
    const PARTS: &'static [PartSpec];
    /// The limits of every request of a route taking `Multipart<Self>`; `None` (the default):
    /// the app state's [`MultipartLimits`], else [`MultipartLimits::DEFAULT`].
    const LIMITS: Option<MultipartLimits> = None;
}

/// Any parts: the default of `Multipart`.
#[derive(Debug, Clone, Copy, Default)]
pub struct AnyParts;

impl MultipartParts for AnyParts {
    const PARTS: &'static [PartSpec] = &[];
}

/// One part a [`MultipartParts`] describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartSpec {
    name: &'static str,
    file: bool,
    required: bool,
    content_type: Option<&'static str>,
    description: Option<&'static str>,
}

impl PartSpec {
    /// A file part named `name`, required: `type: string, format: binary`.
    pub const fn file(name: &'static str) -> Self {
        Self {
            name,
            file: true,
            required: true,
            content_type: None,
            description: None,
        }
    }

    /// A text field named `name`, required: `type: string`.
    pub const fn text(name: &'static str) -> Self {
        Self {
            name,
            file: false,
            required: true,
            content_type: None,
            description: None,
        }
    }

    /// The part may be left out.
    #[must_use]
    pub const fn optional(mut self) -> Self {
        self.required = false;
        self
    }

    /// The media types the part may have, comma-separated (`image/png, image/jpeg`): the
    /// document's `encoding.contentType`.
    #[must_use]
    pub const fn content_type(mut self, media: &'static str) -> Self {
        self.content_type = Some(media);
        self
    }

    /// What the part is, for the document.
    #[must_use]
    pub const fn description(mut self, text: &'static str) -> Self {
        self.description = Some(text);
        self
    }

    /// The part's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// True for a file part.
    pub const fn is_file(&self) -> bool {
        self.file
    }
}

/// The request body of a route taking `Multipart<P>`: `multipart/form-data` with `P`'s parts
/// (or any), their media types and, when `P` sets them, the limits.
pub(super) fn describe<P: MultipartParts>(operation: &mut Operation<'_>) {
    let mut media = Map::new();
    media.insert("schema".into(), schema(P::PARTS));
    let encoding: Map<String, Value> = P::PARTS
        .iter()
        .filter_map(|part| {
            part.content_type
                .map(|media| (part.name.to_owned(), json!({"contentType": media})))
        })
        .collect();
    if !encoding.is_empty() {
        media.insert("encoding".into(), Value::Object(encoding));
    }
    operation.request_body(
        MULTIPART_FORM_DATA,
        Value::Object(media),
        P::LIMITS.map(limits_text),
    );
}

fn schema(parts: &[PartSpec]) -> Value {
    let binary = json!({"type": "string", "format": "binary"});
    if parts.is_empty() {
        return json!({"type": "object", "additionalProperties": binary});
    }
    let mut properties = Map::new();
    for part in parts {
        let mut property = if part.file {
            binary.clone()
        } else {
            json!({"type": "string"})
        };
        if let Some(text) = part.description {
            property["description"] = text.into();
        }
        properties.insert(part.name.to_owned(), property);
    }
    let required: Vec<&str> = parts
        .iter()
        .filter(|p| p.required)
        .map(|p| p.name)
        .collect();
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// The limits as the request body's description.
fn limits_text(limits: MultipartLimits) -> String {
    format!(
        "Limits (413 past each): at most {} part(s), a file of {} bytes, a text field of {} \
         bytes, {} bytes in all.",
        limits.parts, limits.file_size, limits.field_size, limits.total_size
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_make_an_object_schema() {
        let parts = [
            PartSpec::file("avatar").content_type("image/png"),
            PartSpec::text("caption")
                .optional()
                .description("shown below"),
        ];
        assert_eq!(
            schema(&parts),
            json!({
                "type": "object",
                "properties": {
                    "avatar": {"type": "string", "format": "binary"},
                    "caption": {"type": "string", "description": "shown below"},
                },
                "required": ["avatar"],
            })
        );
        assert_eq!(
            schema(&[]),
            json!({"type": "object", "additionalProperties": {"type": "string", "format": "binary"}})
        );
    }
}
