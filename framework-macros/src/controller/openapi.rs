//! A handler's OpenAPI description: the body of the function that writes its operation.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Attribute, Type};

use super::args::{Arg, ArgKind};
use super::attrs::RouteArgs;
use crate::types::{is_named, option_inner, result_value, wrapped};

/// The code that describes a handler for the OpenAPI document: its doc comment, its
/// arguments as parameters and body, its return type as the success response.
pub(super) fn describe_body(
    attrs: &[Attribute],
    route: &RouteArgs,
    args: &[Arg],
    output: Option<&Type>,
) -> TokenStream {
    let doc = doc_comment(attrs);
    let mut steps = vec![quote!(d.doc(#doc);)];
    steps.extend(route.errors.iter().map(|status| quote!(d.error(#status);)));
    steps.extend(args.iter().flat_map(describe_arg));
    // The success response, from the written return type: the value in a `Result`, `T` of a
    // `Json<T>`.
    let value = output
        .and_then(result_value)
        .map(|ty| wrapped(ty, "Json").unwrap_or(ty));
    // `Option<T>`: `T`, or 404.
    let value = value.map(|ty| match option_inner(ty) {
        Some(inner) => {
            steps.push(quote!(d.error(404);));
            wrapped(inner, "Json").unwrap_or(inner)
        }
        None => ty,
    });
    let (status, body) = success(value);
    steps.push(success_response(status, body));
    quote! {
        #[allow(unused_imports)]
        use ::framework::__private::openapi::{ViaNothing as _, ViaSchema as _};
        #(#steps)*
    }
}

/// The lines of a doc comment, each without the space after `///`.
fn doc_comment(attrs: &[Attribute]) -> String {
    let lines: Vec<String> = attrs
        .iter()
        .filter_map(|attr| match &attr.meta {
            syn::Meta::NameValue(nv) if nv.path.is_ident("doc") => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value().strip_prefix(' ').unwrap_or(&s.value()).to_owned()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    lines.join("\n")
}

/// The steps that describe one argument: a parameter, the parameters of a `Query<T>` or a
/// `Path<T>`, or the request body of a `Json<T>` or a `Form<T>`.
fn describe_arg(Arg { ty, kind, .. }: &Arg) -> Vec<TokenStream> {
    let mut steps = Vec::new();
    match kind {
        ArgKind::Named {
            source,
            name,
            optional,
        } => {
            let inner = if *optional {
                option_inner(ty).unwrap_or(ty)
            } else {
                ty
            };
            let location = source.openapi_location();
            let schema = probe(inner);
            let required = !optional;
            steps.push(quote! {
                let schema = #schema;
                d.parameter(#location, #name, #required, schema);
            });
        }
        ArgKind::FromRequest => {
            let body = [
                ("Json", "application/json"),
                ("Form", "application/x-www-form-urlencoded"),
            ]
            .into_iter()
            .find_map(|(name, media)| wrapped(ty, name).map(|inner| (inner, media)));
            if let Some((inner, media)) = body {
                let schema = validated(inner);
                steps.push(quote! {
                    #schema
                    d.body(#media, schema);
                });
            }
            if let Some(inner) = wrapped(ty, "Query") {
                let schema = validated(inner);
                steps.push(quote! {
                    #schema
                    d.parameters_of("query", schema);
                });
            }
            if let Some(inner) = wrapped(ty, "Path") {
                let schema = probe(inner);
                steps.push(quote! {
                    let schema = #schema;
                    d.parameters_of("path", schema);
                });
            }
            // Anything else the argument says of itself (`FromRequest::describe`).
            steps.push(quote! {{
                use ::framework::__private::openapi::{NotFromRequest as _, ViaFromRequest as _};
                (&::framework::__private::openapi::Probe::<#ty>::new()).describe_argument(d);
            }});
        }
        ArgKind::State | ArgKind::Borrowed { .. } => {}
    }
    steps
}

/// The success status and the type of its body: `NoContent` is 204 and `Upgraded` (a
/// WebSocket: `Result<Upgraded>` is the 101 of `ctx.websocket(..)`) is 101, both without a body;
/// `Created<T>` is 201 with `T`; any other value is 200 with itself.
fn success(ty: Option<&Type>) -> (u16, Option<&Type>) {
    match ty {
        Some(ty) if is_named(ty, "NoContent") => (204, None),
        Some(ty) if is_named(ty, "Upgraded") => (101, None),
        Some(ty) => match wrapped(ty, "Created") {
            Some(inner) => (201, Some(wrapped(inner, "Json").unwrap_or(inner))),
            None => (200, Some(ty)),
        },
        None => (200, None),
    }
}

/// The step that describes the success response: its status, and its body's media type and
/// schema, told by the body's type.
fn success_response(status: u16, body: Option<&Type>) -> TokenStream {
    let Some(ty) = body else {
        return quote!(d.success(#status, None, None););
    };
    let text = match ty {
        Type::Reference(r) => is_named(&r.elem, "str"),
        _ => is_named(ty, "String") || is_named(ty, "Cow"),
    };
    let bytes = is_named(ty, "Bytes") || wrapped(ty, "Vec").is_some_and(|t| is_named(t, "u8"));
    if matches!(ty, Type::Tuple(t) if t.elems.is_empty()) {
        quote!(d.success(#status, None, None);)
    } else if text {
        quote!(d.success(#status, Some("text/plain; charset=utf-8"), Some(::framework::__private::openapi::string_schema()));)
    } else if is_named(ty, "BodyStream") {
        quote!(d.success(#status, Some("application/octet-stream"), None); d.streamed();)
    } else if bytes {
        quote!(d.success(#status, Some("application/octet-stream"), None);)
    } else {
        let schema = probe(ty);
        quote! {
            let schema = #schema;
            d.success(#status, Some("application/json"), schema);
        }
    }
}

/// The expression of a type's schema: `Some` for a `JsonSchema` type, else `None` (the
/// framework's `Probe` picks by autoref).
fn probe(ty: &Type) -> TokenStream {
    quote! {
        (&::framework::__private::openapi::Probe::<#ty>::new()).schema(d.generator())
    }
}

/// `let schema = ...;`: `T`'s schema with its `Validate` rules written in.
fn validated(inner: &Type) -> TokenStream {
    let schema = probe(inner);
    quote! {
        let schema = #schema;
        let schema = d.validated(
            schema,
            <#inner as ::framework::Validate>::describe_rules,
        );
    }
}
