//! A handler's OpenAPI description: the body of the function that writes its operation.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Attribute, Type};

use super::args::{Arg, ArgKind};
use super::attrs::RouteArgs;
use crate::types::option_inner;

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
    // The success response, asked of the return type as the method's answer is: `None` of an
    // `Option` (in a `Result` or not) is a 404, and the value's type describes itself or gives
    // its schema.
    let output = output.map_or_else(|| quote!(()), |ty| quote!(#ty));
    steps.push(quote! {
        let tag = (&&&&::framework::__private::returned::ReturnProbe::<#output>::new()).tag();
        if tag.found() {
            d.error(404);
        }
        let value = tag.value();
        let schema = (&&&value).reply_schema(d.generator());
        d.success((&&value).status(), Some("application/json"), schema);
    });
    quote! {
        #[allow(unused_imports)]
        use ::framework::__private::openapi::{
            ViaDescribeReply as _, ViaNoReplySchema as _, ViaNothing as _, ViaReplySchema as _,
            ViaSchema as _,
        };
        #[allow(unused_imports)]
        use ::framework::__private::returned::{
            ViaFound as _, ViaFoundResult as _, ViaNoStatus as _, ViaResult as _,
            ViaStatus as _, ViaValue as _,
        };
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

/// The steps that describe one argument: a parameter by name, or what a `FromRequest`
/// argument reads (`framework::extract::Reads`: the request body of a `Json<T>` or a `Form<T>`, the parameters
/// of a `Query<T>` or a `Path<T>`) and says of itself (`FromRequest::describe`).
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
            // What it reads (a body, the query, the path parameters), asked of its type's
            // `Reads`, so an alias describes as the type it names.
            steps.push(quote! {{
                use ::framework::__private::openapi::{
                    ViaNoReads as _, ViaReads as _, ViaReadsSchema as _,
                };
                (&&&::framework::__private::openapi::Probe::<#ty>::new()).describe_reads(d);
            }});
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

/// The expression of a type's schema: `Some` for a `JsonSchema` type, else `None` (the
/// framework's `Probe` picks by autoref).
fn probe(ty: &Type) -> TokenStream {
    quote! {
        (&::framework::__private::openapi::Probe::<#ty>::new()).schema(d.generator())
    }
}
