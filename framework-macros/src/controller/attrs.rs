//! The attributes, parsed: `#[controller(..)]`, the route attributes (`#[get("/path", ..)]`)
//! and the argument attributes (`#[header("name")]`, `#[cookie("name")]`, `#[state]`).

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::parse::{Parse, ParseStream, Peek};
use syn::spanned::Spanned;
use syn::{Attribute, Ident, LitStr, Token};

/// The keys of the attributes' argument lists.
mod kw {
    syn::custom_keyword!(prefix);
    syn::custom_keyword!(middleware);
    syn::custom_keyword!(errors);
}

const METHODS: [&str; 7] = ["get", "post", "put", "patch", "delete", "head", "options"];

/// `#[controller(prefix = "...", middleware(a, b))]`, parsed.
#[derive(Default)]
pub(super) struct ControllerArgs {
    pub(super) prefix: Option<LitStr>,
    pub(super) middleware: Vec<Ident>,
}

impl Parse for ControllerArgs {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut args = ControllerArgs::default();
        parse_keys(input, || {
            if peek_key(input, kw::prefix) {
                input.parse::<kw::prefix>()?;
                input.parse::<Token![=]>()?;
                let lit: LitStr = input.parse()?;
                // The router's own grammar: what `build()` would refuse fails here, at the string.
                if let Err(err) = route_pattern::validate_prefix(&lit.value()) {
                    return Err(syn::Error::new(lit.span(), err));
                }
                args.prefix = Some(lit);
                Ok(())
            } else if peek_key(input, kw::middleware) {
                input.parse::<kw::middleware>()?;
                args.middleware = parse_middleware_list(input)?;
                Ok(())
            } else {
                unknown_key(input, |key| {
                    let written = key.to_token_stream().to_string().replace(' ', "");
                    syn::Error::new(
                        key.span(),
                        format!(
                            "unknown controller key `{written}`; expected `prefix` or `middleware`"
                        ),
                    )
                })
            }
        })?;
        Ok(args)
    }
}

/// `#[get("/path", middleware(a), errors(409))]`, parsed.
pub(super) struct RouteArgs {
    pub(super) method: &'static str,
    pub(super) path: LitStr,
    pub(super) middleware: Vec<Ident>,
    /// `errors(409, 429)`: error statuses the handler itself responds with, for the document.
    pub(super) errors: Vec<u16>,
}

/// The keys after a route's path: `middleware(a, b)` and `errors(409, 429)`.
#[derive(Default)]
struct RouteKeys {
    middleware: Vec<Ident>,
    errors: Vec<u16>,
}

impl Parse for RouteKeys {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut keys = RouteKeys::default();
        parse_keys(input, || {
            if peek_key(input, kw::middleware) {
                input.parse::<kw::middleware>()?;
                keys.middleware = parse_middleware_list(input)?;
                Ok(())
            } else if peek_key(input, kw::errors) {
                input.parse::<kw::errors>()?;
                keys.errors = parse_error_statuses(input)?;
                Ok(())
            } else {
                unknown_key(input, |key| {
                    syn::Error::new(
                        key.span(),
                        "unknown route key; expected `middleware` or `errors`",
                    )
                })
            }
        })?;
        Ok(keys)
    }
}

/// The method of a route attribute (`get` of `#[get]` or `#[framework::get]`), if it is one.
pub(super) fn route_method(attr: &Attribute) -> Option<&'static str> {
    let last = attr.path().segments.last()?;
    METHODS.into_iter().find(|m| last.ident == m)
}

/// The arguments of a route attribute, the path checked by the router's rules.
pub(super) fn parse_route_args(method: &'static str, attr: &Attribute) -> syn::Result<RouteArgs> {
    let (path, keys) = attr.parse_args_with(|input: ParseStream<'_>| {
        let path: LitStr = input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                format!("expected a path: `#[{method}(\"/path\")]`"),
            )
        })?;
        let mut keys = RouteKeys::default();
        if input.parse::<Token![,]>().is_ok() && !input.is_empty() {
            // A token stream of its own: an "unexpected end of input" in the keys points at
            // the call site, not at the attribute's closing parenthesis.
            keys = syn::parse2(input.parse::<TokenStream>()?)?;
        }
        Ok((path, keys))
    })?;
    // The router's own grammar; the count of params is checked on the full path, prefix
    // included, where the controller is known.
    match route_pattern::validate(&path.value()) {
        Err(route_pattern::PatternError::TooManyParams { .. }) | Ok(()) => {}
        Err(err) => return Err(syn::Error::new(path.span(), err)),
    }
    Ok(RouteArgs {
        method,
        path,
        middleware: keys.middleware,
        errors: keys.errors,
    })
}

/// A list of keys with their values, separated by commas, as `syn::meta` reads one:
/// `parse_key` reads the key at the head of `input` and its value.
fn parse_keys(
    input: ParseStream<'_>,
    mut parse_key: impl FnMut() -> syn::Result<()>,
) -> syn::Result<()> {
    while !input.is_empty() {
        parse_key()?;
        if input.is_empty() {
            break;
        }
        input.parse::<Token![,]>()?;
    }
    Ok(())
}

/// Whether `input` starts with the key `key` alone (`prefix::x` is another key).
fn peek_key(input: ParseStream<'_>, key: impl Peek) -> bool {
    input.peek(key) && !input.peek2(Token![::])
}

/// Refuses the key at the head of `input` with `refuse(key)`. The key is read as `syn::meta`
/// reads one (a path whose names may be keywords), so a token that is no key at all gets
/// syn's message.
fn unknown_key(
    input: ParseStream<'_>,
    refuse: impl Fn(&syn::Path) -> syn::Error,
) -> syn::Result<()> {
    let rest: TokenStream = input.parse()?;
    syn::parse::Parser::parse2(syn::meta::parser(|meta| Err(refuse(&meta.path))), rest)
}

/// `(a, b)` after `middleware`: names registered with `App::register_middleware`.
fn parse_middleware_list(input: ParseStream<'_>) -> syn::Result<Vec<Ident>> {
    let content;
    syn::parenthesized!(content in input);
    let mut names = Vec::new();
    while !content.is_empty() {
        if content.peek(LitStr) {
            let name: LitStr = content.parse()?;
            return Err(syn::Error::new(
                name.span(),
                format!(
                    "a middleware is named without quotes: write `middleware({})`",
                    name.value()
                ),
            ));
        }
        let path: syn::Path = content
            .parse()
            .map_err(|e| syn::Error::new(e.span(), "expected a middleware name, e.g. `session`"))?;
        let ident = path.get_ident().ok_or_else(|| {
            syn::Error::new_spanned(
                &path,
                "a middleware is named by one identifier registered with `App::register_middleware`, e.g. `session`",
            )
        })?;
        names.push(ident.clone());
        if content.is_empty() {
            break;
        }
        content.parse::<Token![,]>()?;
    }
    Ok(names)
}

/// `(409, 429)` after `errors`: HTTP error statuses, 400 to 599.
fn parse_error_statuses(input: ParseStream<'_>) -> syn::Result<Vec<u16>> {
    let content;
    syn::parenthesized!(content in input);
    let list = content.parse_terminated(|i| i.parse::<syn::LitInt>(), Token![,])?;
    list.iter()
        .map(|lit| {
            lit.base10_parse::<u16>()
                .ok()
                .filter(|status| (400..=599).contains(status))
                .ok_or_else(|| {
                    syn::Error::new(
                        lit.span(),
                        "`errors(..)` lists error statuses from 400 to 599, e.g. `errors(409)`",
                    )
                })
        })
        .collect()
}

/// An argument's attribute: where its value comes from, when not from `FromRequest`.
pub(super) enum ArgAttr {
    /// `#[header("name")]`, the name lower-cased.
    Header(String),
    /// `#[cookie("name")]`, the name lower-cased.
    Cookie(String),
    /// `#[state]`: a clone of the app's state value.
    State,
    /// `#[header]` or `#[cookie]` without a usable name: reported, and the argument is not
    /// looked at further.
    Nameless,
}

impl ArgAttr {
    /// Reads `#[header("name")]`, `#[cookie("name")]` or `#[state]`; `None` for any other
    /// attribute. A misuse comes with its error: `#[state(..)]` still reads as `State`, a
    /// header or cookie without a name as `Nameless`.
    pub(super) fn parse(attr: &Attribute) -> Option<(ArgAttr, Option<syn::Error>)> {
        let path = attr.path();
        if path.is_ident("state") {
            let misuse = (!matches!(attr.meta, syn::Meta::Path(_)))
                .then(|| syn::Error::new(attr.span(), "`#[state]` takes no arguments"));
            return Some((ArgAttr::State, misuse));
        }
        let (kind, named): (&str, fn(String) -> ArgAttr) = if path.is_ident("header") {
            ("header", ArgAttr::Header)
        } else if path.is_ident("cookie") {
            ("cookie", ArgAttr::Cookie)
        } else {
            return None;
        };
        Some(match attr.parse_args::<LitStr>() {
            Ok(name) if !name.value().is_empty() => {
                (named(name.value().to_ascii_lowercase()), None)
            }
            _ => (
                ArgAttr::Nameless,
                Some(syn::Error::new(
                    attr.span(),
                    format!("expected a name: `#[{kind}(\"name\")]`"),
                )),
            ),
        })
    }
}
