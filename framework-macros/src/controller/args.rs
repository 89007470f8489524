//! A handler's arguments after `&self`: how each is made from the request, checked against
//! the route's path.

use quote::format_ident;
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Ident, Signature, Type};

use super::Errors;
use super::attrs::ArgAttr;
use crate::types::{is_named, last_segment, option_inner};

/// Plain value types: an argument of one of these names a path parameter, or is a mistake.
const SCALARS: [&str; 17] = [
    "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32",
    "f64", "bool", "char", "String",
];

/// One argument of a handler, and how it is made from the request.
pub(super) struct Arg {
    pub(super) ty: Type,
    pub(super) kind: ArgKind,
    /// The argument's name, when its pattern is one (`_` and other patterns have none).
    pub(super) name: Option<Ident>,
}

pub(super) enum ArgKind {
    /// `<T as FromRequest>::from_request(ctx)`.
    FromRequest,
    /// A path parameter, header or cookie by name, parsed with `FromStr`; `optional` for an
    /// `Option<T>` (the type inside is `ty`).
    Named {
        source: Source,
        name: String,
        optional: bool,
    },
    /// `#[state]`: a clone of the app's state value.
    State,
    /// `&mut T` / `&T` borrowed from the context (`FromContext`); `&mut Context` is the context.
    Borrowed { mutable: bool, context: bool },
}

/// Where a named argument is read from.
#[derive(Clone, Copy)]
pub(super) enum Source {
    Path,
    Header,
    Cookie,
}

impl Source {
    /// The variant of `framework::__private::Source` that reads it.
    pub(super) fn ident(self) -> Ident {
        match self {
            Source::Path => format_ident!("Path"),
            Source::Header => format_ident!("Header"),
            Source::Cookie => format_ident!("Cookie"),
        }
    }

    /// The parameter's location (`in`) in the OpenAPI document.
    pub(super) fn openapi_location(self) -> &'static str {
        match self {
            Source::Path => "path",
            Source::Header => "header",
            Source::Cookie => "cookie",
        }
    }
}

/// How each argument after `&self` is made; misuse is reported at the argument.
pub(super) fn analyse_args(sig: &mut Signature, full_path: &str, errors: &mut Errors) -> Vec<Arg> {
    let params = path_params(full_path);
    let mut args = Vec::new();
    let mut borrowed_seen = false;
    for input in sig.inputs.iter_mut().skip(1) {
        let FnArg::Typed(typed) = input else { continue };
        let attr = take_arg_attr(&mut typed.attrs, errors);
        let ident = match &*typed.pat {
            syn::Pat::Ident(p) => Some(p.ident.clone()),
            _ => None,
        };
        let name = ident.as_ref().map(Ident::to_string).unwrap_or_default();
        let ty = (*typed.ty).clone();
        let named = |source, name| ArgKind::Named {
            source,
            name,
            optional: option_inner(&ty).is_some(),
        };
        let kind = if let Type::Reference(reference) = &ty {
            if attr.is_some() {
                errors.push(syn::Error::new(
                    typed.ty.span(),
                    "`#[header]`, `#[cookie]` and `#[state]` arguments are owned values",
                ));
            }
            if borrowed_seen {
                errors.push(syn::Error::new(
                    typed.ty.span(),
                    "a handler takes at most one borrowed argument (`&mut Context`, \
                     `&mut Session`, ...): the others are owned values",
                ));
            }
            borrowed_seen = true;
            ArgKind::Borrowed {
                mutable: reference.mutability.is_some(),
                context: is_named(&reference.elem, "Context"),
            }
        } else if let Some(attr) = attr {
            match attr {
                ArgAttr::Header(name) => named(Source::Header, name),
                ArgAttr::Cookie(name) => named(Source::Cookie, name),
                ArgAttr::State => ArgKind::State,
                ArgAttr::Nameless => continue,
            }
        } else if params.contains(&name) {
            named(Source::Path, name)
        } else {
            let segment = last_segment(&ty).map(|s| s.ident.to_string());
            if let Some(segment) = &segment
                && SCALARS.contains(&segment.as_str())
            {
                let known = if params.is_empty() {
                    "it has none".to_owned()
                } else {
                    params
                        .iter()
                        .map(|p| format!("`{p}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                errors.push(syn::Error::new(
                    typed.pat.span(),
                    format!(
                        "`{name}` is not a parameter of the path `{full_path}` ({known}); \
                         a plain `{segment}` argument is a path parameter by name"
                    ),
                ));
            }
            ArgKind::FromRequest
        };
        args.push(Arg {
            ty,
            kind,
            name: ident,
        });
    }
    args
}

/// `#[header("name")]`, `#[cookie("name")]` or `#[state]` taken off an argument.
fn take_arg_attr(attrs: &mut Vec<Attribute>, errors: &mut Errors) -> Option<ArgAttr> {
    let mut found = None;
    let mut kept = Vec::with_capacity(attrs.len());
    for attr in std::mem::take(attrs) {
        let Some((arg_attr, misuse)) = ArgAttr::parse(&attr) else {
            kept.push(attr);
            continue;
        };
        if found.is_some() {
            errors.push(syn::Error::new(
                attr.span(),
                "an argument takes one of `#[header]`, `#[cookie]` and `#[state]`",
            ));
            continue;
        }
        if let Some(misuse) = misuse {
            errors.push(misuse);
        }
        found = Some(arg_attr);
    }
    *attrs = kept;
    found
}

/// The parameter names of a route path that an argument can be named after (a bare `*`'s
/// name is no identifier), read by the router's grammar.
fn path_params(path: &str) -> Vec<String> {
    route_pattern::param_names(path)
        .filter(|name| *name != route_pattern::WILDCARD && !name.is_empty())
        .map(str::to_owned)
        .collect()
}
