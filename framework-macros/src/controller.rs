//! `#[controller]` and the route attributes it consumes.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Ident, ImplItem, ImplItemFn, Item, ItemImpl, LitStr, Type};

const METHODS: [&str; 7] = ["get", "post", "put", "patch", "delete", "head", "options"];

/// `#[controller(prefix = "...", middleware(a, b))]`, parsed.
#[derive(Default)]
struct ControllerArgs {
    prefix: Option<LitStr>,
    middleware: Vec<Ident>,
}

/// `#[get("/path", middleware(a))]`, parsed.
struct RouteArgs {
    method: &'static str,
    path: LitStr,
    middleware: Vec<Ident>,
    /// `errors(409, 429)`: error statuses the handler itself answers with, for the document.
    errors: Vec<u16>,
}

/// A handler method with its route and its arguments after `&self`.
struct Handler {
    name: Ident,
    route: RouteArgs,
    args: Vec<Arg>,
    /// The body of its OpenAPI description function.
    describe: TokenStream,
}

/// One argument of a handler, and how it is made from the request.
struct Arg {
    ty: Type,
    kind: ArgKind,
}

enum ArgKind {
    /// `<T as FromRequest>::from_request(ctx)`.
    FromRequest,
    /// A path parameter, header or cookie by name, parsed with `FromStr`; `optional` for an
    /// `Option<T>` (the type inside is `ty`).
    Named {
        source: &'static str,
        name: String,
        optional: bool,
    },
    /// `#[state]`: a clone of the app's state value.
    State,
    /// `&mut T` / `&T` borrowed from the context (`FromContext`); `&mut Context` is the context.
    Borrowed { mutable: bool, context: bool },
}

/// Plain value types: an argument of one of these names a path parameter, or is a mistake.
const SCALARS: [&str; 17] = [
    "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32",
    "f64", "bool", "char", "String",
];

/// Collects errors so one expansion reports all of them.
#[derive(Default)]
struct Errors(Option<syn::Error>);

impl Errors {
    fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }

    fn push(&mut self, err: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(err),
            None => self.0 = Some(err),
        }
    }
}

fn parse_middleware_list(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<Vec<Ident>> {
    let content;
    syn::parenthesized!(content in meta.input);
    let mut names = Vec::new();
    while !content.is_empty() {
        if content.peek(syn::LitStr) {
            let name: syn::LitStr = content.parse()?;
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
        content.parse::<syn::Token![,]>()?;
    }
    Ok(names)
}

fn parse_controller_args(attr: TokenStream) -> syn::Result<ControllerArgs> {
    let mut args = ControllerArgs::default();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("prefix") {
            let lit: LitStr = meta.value()?.parse()?;
            if let Err(msg) = crate::route_path::check(&lit.value(), true) {
                return Err(syn::Error::new(lit.span(), msg));
            }
            args.prefix = Some(lit);
            Ok(())
        } else if meta.path.is_ident("middleware") {
            args.middleware = parse_middleware_list(&meta)?;
            Ok(())
        } else {
            let key = meta.path.to_token_stream().to_string().replace(' ', "");
            Err(syn::Error::new(
                meta.path.span(),
                format!("unknown controller key `{key}`; expected `prefix` or `middleware`"),
            ))
        }
    });
    syn::parse::Parser::parse2(parser, attr)?;
    Ok(args)
}

fn route_method(attr: &Attribute) -> Option<&'static str> {
    let last = attr.path().segments.last()?;
    METHODS.into_iter().find(|m| last.ident == m)
}

fn parse_route_args(method: &'static str, attr: &Attribute) -> syn::Result<RouteArgs> {
    let mut path: Option<LitStr> = None;
    let mut middleware = Vec::new();
    let mut errors = Vec::new();
    attr.parse_args_with(|input: syn::parse::ParseStream<'_>| {
        let lit: LitStr = input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                format!("expected a path: `#[{method}(\"/path\")]`"),
            )
        })?;
        path = Some(lit);
        if input.parse::<syn::Token![,]>().is_ok() && !input.is_empty() {
            let parser = syn::meta::parser(|meta| {
                if meta.path.is_ident("middleware") {
                    middleware = parse_middleware_list(&meta)?;
                    Ok(())
                } else if meta.path.is_ident("errors") {
                    errors = parse_error_statuses(&meta)?;
                    Ok(())
                } else {
                    Err(syn::Error::new(
                        meta.path.span(),
                        "unknown route key; expected `middleware` or `errors`",
                    ))
                }
            });
            syn::parse::Parser::parse2(parser, input.parse::<TokenStream>()?)?;
        }
        Ok(())
    })?;
    let path = path.ok_or_else(|| syn::Error::new(attr.span(), "missing route path"))?;
    if let Err(msg) = crate::route_path::check(&path.value(), false) {
        return Err(syn::Error::new(path.span(), msg));
    }
    Ok(RouteArgs {
        method,
        path,
        middleware,
        errors,
    })
}

/// `errors(409, 429)`: HTTP error statuses, 400 to 599.
fn parse_error_statuses(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<Vec<u16>> {
    let content;
    syn::parenthesized!(content in meta.input);
    let list = content.parse_terminated(|i| i.parse::<syn::LitInt>(), syn::Token![,])?;
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

/// The parameter names of a route path: `:name`, `{name}` and `*name` segments.
fn path_params(path: &str) -> Vec<String> {
    path.split('/')
        .filter_map(|part| {
            part.strip_prefix(':')
                .or_else(|| part.strip_prefix('{').and_then(|p| p.strip_suffix('}')))
                .or_else(|| part.strip_prefix('*'))
        })
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The last path segment's name of a type (`Json` for `framework::extract::Json<T>`).
fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        _ => None,
    }
}

/// `T` of `Option<T>`.
fn option_inner(ty: &Type) -> Option<&Type> {
    wrapped(ty, "Option")
}

/// `T` of `<name><T, ...>` (by the last path segment's name).
fn wrapped<'t>(ty: &'t Type, name: &str) -> Option<&'t Type> {
    let segment = last_segment(ty)?;
    if segment.ident != name {
        return None;
    }
    first_generic(segment)
}

fn first_generic(segment: &syn::PathSegment) -> Option<&Type> {
    match &segment.arguments {
        syn::PathArguments::AngleBracketed(args) => args.args.iter().find_map(|a| match a {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        }),
        _ => None,
    }
}

/// The code that describes a handler for the OpenAPI document: its doc comment, its
/// arguments as parameters and body, its return type as the success response.
fn describe_body(
    method: &ImplItemFn,
    route: &RouteArgs,
    args: &[Arg],
    output: Option<&Type>,
) -> TokenStream {
    let doc: Vec<String> = method
        .attrs
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
    let doc = doc.join("\n");
    let probe = |ty: &Type| {
        quote! {
            (&::framework::__private::openapi::Probe::<#ty>::new()).schema(d.generator())
        }
    };
    let mut steps = vec![quote!(d.doc(#doc);)];
    steps.extend(route.errors.iter().map(|status| quote!(d.error(#status);)));
    for Arg { ty, kind } in args {
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
                let location = source.to_ascii_lowercase();
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
                // `T`'s schema with its `Validate` rules written in.
                let validated = |inner: &Type| {
                    let schema = probe(inner);
                    quote! {
                        let schema = #schema;
                        let schema = d.validated(
                            schema,
                            <#inner as ::framework::Validate>::describe_rules,
                        );
                    }
                };
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
    }
    // The success response, from the written return type.
    let value = output.map(|ty| {
        let ty = if returns_result(&Some(ty)) {
            last_segment(ty).and_then(first_generic)
        } else {
            Some(ty)
        };
        ty.map(|ty| wrapped(ty, "Json").unwrap_or(ty))
    });
    // `Option<T>`: `T`, or 404.
    let value = value.map(|ty| {
        ty.map(|ty| match wrapped(ty, "Option") {
            Some(inner) => {
                steps.push(quote!(d.error(404);));
                wrapped(inner, "Json").unwrap_or(inner)
            }
            None => ty,
        })
    });
    // `Created<T>`: 201 with `T`; `NoContent`: 204 and no body.
    let (status, value) = match value {
        Some(Some(ty)) if type_name(ty).is_some_and(|n| n == "NoContent") => (204u16, None),
        // A WebSocket: `Result<Upgraded>` is the 101 of `ctx.websocket(..)`.
        Some(Some(ty)) if type_name(ty).is_some_and(|n| n == "Upgraded") => (101u16, None),
        Some(Some(ty)) => match wrapped(ty, "Created") {
            Some(inner) => (201u16, Some(Some(wrapped(inner, "Json").unwrap_or(inner)))),
            None => (200u16, Some(Some(ty))),
        },
        other => (200u16, other),
    };
    let success = match value {
        None | Some(None) => quote!(d.success(#status, None, None);),
        Some(Some(ty)) => {
            let text = match ty {
                Type::Reference(r) => last_segment(&r.elem).is_some_and(|s| s.ident == "str"),
                _ => last_segment(ty).is_some_and(|s| s.ident == "String" || s.ident == "Cow"),
            };
            let bytes = last_segment(ty).is_some_and(|s| {
                s.ident == "Bytes"
                    || s.ident == "BodyStream"
                    || (s.ident == "Vec"
                        && first_generic(s)
                            .is_some_and(|t| last_segment(t).is_some_and(|u| u.ident == "u8")))
            });
            let unit = matches!(ty, Type::Tuple(t) if t.elems.is_empty());
            if unit {
                quote!(d.success(#status, None, None);)
            } else if text {
                quote!(d.success(#status, Some("text/plain; charset=utf-8"), Some(::framework::__private::openapi::string_schema()));)
            } else if last_segment(ty).is_some_and(|s| s.ident == "BodyStream") {
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
    };
    steps.push(success);
    quote! {
        #[allow(unused_imports)]
        use ::framework::__private::openapi::{ViaNothing as _, ViaSchema as _};
        #(#steps)*
    }
}

/// `#[header("name")]`, `#[cookie("name")]` or `#[state]` taken off an argument.
fn take_arg_attr(
    attrs: &mut Vec<Attribute>,
    errors: &mut Errors,
) -> Option<(String, Option<String>)> {
    let mut found = None;
    let mut kept = Vec::with_capacity(attrs.len());
    for attr in std::mem::take(attrs) {
        let Some(kind) = ["header", "cookie", "state"]
            .into_iter()
            .find(|k| attr.path().is_ident(k))
        else {
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
        if kind == "state" {
            if !matches!(attr.meta, syn::Meta::Path(_)) {
                errors.push(syn::Error::new(
                    attr.span(),
                    "`#[state]` takes no arguments",
                ));
            }
            found = Some((kind.to_owned(), None));
            continue;
        }
        match attr.parse_args::<LitStr>() {
            Ok(name) if !name.value().is_empty() => {
                found = Some((kind.to_owned(), Some(name.value().to_ascii_lowercase())));
            }
            _ => {
                errors.push(syn::Error::new(
                    attr.span(),
                    format!("expected a name: `#[{kind}(\"name\")]`"),
                ));
                // Reported: the argument is not looked at further.
                found = Some(("invalid".to_owned(), None));
            }
        }
    }
    *attrs = kept;
    found
}

/// How each argument after `&self` is made; misuse is reported at the argument.
fn analyse_args(
    method: &mut ImplItemFn,
    params: &[String],
    full_path: &str,
    errors: &mut Errors,
) -> Vec<Arg> {
    let mut args = Vec::new();
    let mut borrowed_seen = false;
    let mut body_seen = false;
    for input in method.sig.inputs.iter_mut().skip(1) {
        let FnArg::Typed(typed) = input else { continue };
        let attr = take_arg_attr(&mut typed.attrs, errors);
        let name = match &*typed.pat {
            syn::Pat::Ident(p) => p.ident.to_string(),
            _ => String::new(),
        };
        let ty = (*typed.ty).clone();
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
            let context = last_segment(&reference.elem).is_some_and(|s| s.ident == "Context");
            ArgKind::Borrowed {
                mutable: reference.mutability.is_some(),
                context,
            }
        } else if let Some((kind, header)) = attr {
            match (kind.as_str(), header) {
                ("state", _) => ArgKind::State,
                (source, Some(name)) => ArgKind::Named {
                    source: if source == "header" {
                        "Header"
                    } else {
                        "Cookie"
                    },
                    name,
                    optional: option_inner(&ty).is_some(),
                },
                _ => continue,
            }
        } else if params.contains(&name) {
            ArgKind::Named {
                source: "Path",
                name,
                optional: option_inner(&ty).is_some(),
            }
        } else {
            let segment = last_segment(&ty).map(|s| s.ident.to_string());
            if let Some(segment) = &segment {
                if SCALARS.contains(&segment.as_str()) {
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
                if segment == "Json" || segment == "Form" {
                    if body_seen {
                        errors.push(syn::Error::new(
                            typed.ty.span(),
                            "a handler reads the request body once: only one `Json` or `Form` \
                             argument",
                        ));
                    }
                    body_seen = true;
                }
            }
            ArgKind::FromRequest
        };
        args.push(Arg { ty, kind });
    }
    args
}

/// Takes the route attribute off a method and checks the method's shape.
fn take_route(method: &mut ImplItemFn, prefix: &str, errors: &mut Errors) -> Option<Handler> {
    let mut route = None;
    let mut kept = Vec::with_capacity(method.attrs.len());
    for attr in std::mem::take(&mut method.attrs) {
        match route_method(&attr) {
            Some(verb) if route.is_some() => errors.push(syn::Error::new(
                attr.span(),
                format!("`{verb}`: a handler has exactly one route attribute"),
            )),
            Some(verb) => match parse_route_args(verb, &attr) {
                Ok(args) => route = Some(args),
                Err(e) => errors.push(e),
            },
            None => kept.push(attr),
        }
    }
    method.attrs = kept;
    let route = route?;
    let name = method.sig.ident.clone();
    let mut ok = true;
    if method.sig.asyncness.is_none() {
        errors.push(syn::Error::new(
            method.sig.fn_token.span,
            format!("handler `{name}` must be an `async fn`"),
        ));
        ok = false;
    }
    if !method.sig.generics.params.is_empty() {
        errors.push(syn::Error::new(
            method.sig.generics.span(),
            format!("handler `{name}` cannot be generic"),
        ));
        ok = false;
    }
    let takes_self = matches!(
        method.sig.inputs.first(),
        Some(FnArg::Receiver(r)) if r.reference.is_some() && r.mutability.is_none()
    );
    if !takes_self {
        // The parentheses, not `inputs`: an empty list has no span of its own and would point
        // at `#[controller]`.
        errors.push(syn::Error::new(
            method.sig.paren_token.span.join(),
            format!(
                "handler `{name}` must take `&self` first, then its arguments \
                 (e.g. `ctx: &mut Context`, `body: Json<T>`, `id: u64`)"
            ),
        ));
        ok = false;
    }
    let full_path = format!("{prefix}{}", route.path.value());
    let params = path_params(&full_path);
    let args = if takes_self {
        analyse_args(method, &params, &full_path, errors)
    } else {
        Vec::new()
    };
    let output = match &method.sig.output {
        syn::ReturnType::Default => None,
        syn::ReturnType::Type(_, ty) => Some(&**ty),
    };
    let describe = describe_body(method, &route, &args, output);
    ok.then_some(Handler {
        name,
        route,
        args,
        describe,
    })
}

/// The written return type of the handler `name` in `block`.
fn method_output<'a>(block: &'a ItemImpl, name: &Ident) -> Option<&'a Type> {
    block.items.iter().find_map(|item| match item {
        ImplItem::Fn(method) if method.sig.ident == *name => match &method.sig.output {
            syn::ReturnType::Default => None,
            syn::ReturnType::Type(_, ty) => Some(&**ty),
        },
        _ => None,
    })
}

/// Whether a handler's return type is a `Result` (by name: `Result`, `framework::Result`, an
/// alias ending in `Result`), rather than a plain value or `()`.
pub(crate) fn returns_result(ty: &Option<&Type>) -> bool {
    ty.and_then(type_name)
        .is_some_and(|name| name.to_string().ends_with("Result"))
}

/// Whether a handler's value (inside a `Result`, if it returns one) is an `Option`: `None`
/// answers 404.
fn returns_option(ty: &Option<&Type>) -> bool {
    let value = if returns_result(ty) {
        ty.and_then(|ty| last_segment(ty)).and_then(first_generic)
    } else {
        *ty
    };
    value
        .and_then(type_name)
        .is_some_and(|name| name == "Option")
}

fn type_name(ty: &Type) -> Option<&Ident> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| &s.ident),
        _ => None,
    }
}

/// Emits the item again next to the errors, so the rest of the crate still type-checks.
fn reemit(item: impl quote::ToTokens, err: &syn::Error) -> TokenStream {
    let errors = err.to_compile_error();
    quote!(#item #errors)
}

pub(crate) fn outside_controller(verb: &str, item: TokenStream) -> TokenStream {
    let err = syn::Error::new(
        Span::call_site(),
        format!("`#[{verb}]` is only valid on a method inside a `#[controller]` impl block"),
    );
    reemit(item, &err)
}

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let parsed: Item = match syn::parse2(item.clone()) {
        Ok(item) => item,
        Err(e) => return reemit(item, &e),
    };
    let Item::Impl(mut block) = parsed else {
        let err = syn::Error::new(
            parsed.span(),
            "`#[controller]` must be placed on an `impl` block, e.g. `impl UserController { ... }`",
        );
        return reemit(parsed, &err);
    };
    let mut errors = Errors::default();
    let args = parse_controller_args(attr).unwrap_or_else(|e| {
        errors.push(e);
        ControllerArgs::default()
    });
    if let Some((_, path, _)) = &block.trait_ {
        errors.push(syn::Error::new(
            path.span(),
            "`#[controller]` goes on an inherent impl block, not a trait impl",
        ));
    }
    if !block.generics.params.is_empty() {
        errors.push(syn::Error::new(
            block.generics.span(),
            "a controller cannot be generic",
        ));
    }
    let prefix = args.prefix.as_ref().map_or_else(String::new, LitStr::value);
    let handlers: Vec<Handler> = block
        .items
        .iter_mut()
        .filter_map(|item| match item {
            ImplItem::Fn(method) => take_route(method, &prefix, &mut errors),
            _ => None,
        })
        .collect();
    let self_name = type_name(&block.self_ty).cloned();
    if self_name.is_none() {
        errors.push(syn::Error::new(
            block.self_ty.span(),
            "a controller must be a named type",
        ));
    }
    if let Err(err) = errors.finish() {
        return reemit(&block, &err);
    }
    let Some(self_name) = self_name else {
        return quote!(#block);
    };
    let registration = registration(&block, &self_name, &args, &handlers);
    quote! {
        #block
        #registration
    }
}

/// The statements that make a handler's arguments (owned ones in order, the borrowed one
/// last), and the expressions passed to the method.
fn arg_values(args: &[Arg]) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let mut lets = Vec::new();
    let mut borrowed = None;
    let mut values = Vec::new();
    for (index, Arg { ty, kind }) in args.iter().enumerate() {
        let var = format_ident!("__arg{}", index);
        let span = ty.span();
        let make = match kind {
            ArgKind::FromRequest => quote_spanned! {span=>
                <#ty as ::framework::__private::FromRequest>::from_request(ctx)?
            },
            ArgKind::Named {
                source,
                name,
                optional,
            } => {
                let source = format_ident!("{}", source);
                let inner = if *optional {
                    option_inner(ty).unwrap_or(ty)
                } else {
                    ty
                };
                let read = if *optional {
                    quote_spanned!(span=> optional)
                } else {
                    quote_spanned!(span=> required)
                };
                quote_spanned! {span=>
                    ::framework::__private::#read::<#inner>(
                        ctx,
                        ::framework::__private::Source::#source,
                        #name,
                    )?
                }
            }
            ArgKind::State => quote_spanned! {span=>
                ::framework::__private::state::<#ty>(ctx)?
            },
            ArgKind::Borrowed { mutable, context } => {
                let Type::Reference(reference) = ty else {
                    continue;
                };
                let elem = &reference.elem;
                let value = match (context, mutable) {
                    (true, true) => quote!(&mut *ctx),
                    (true, false) => quote!(&*ctx),
                    (false, true) => quote_spanned! {span=>
                        <#elem as ::framework::__private::FromContext>::from_context(ctx)?
                    },
                    (false, false) => quote_spanned! {span=>
                        &*<#elem as ::framework::__private::FromContext>::from_context(ctx)?
                    },
                };
                borrowed = Some(quote!(let #var = #value;));
                values.push(quote!(#var));
                continue;
            }
        };
        lets.push(quote!(let #var = #make;));
        values.push(quote!(#var));
    }
    lets.extend(borrowed);
    (lets, values)
}

fn registration(
    block: &ItemImpl,
    self_name: &Ident,
    args: &ControllerArgs,
    handlers: &[Handler],
) -> TokenStream {
    let self_ty = &block.self_ty;
    let prefix = args.prefix.as_ref().map_or_else(String::new, LitStr::value);
    let group_middleware = args.middleware.iter().map(Ident::to_string);
    let controller_name = self_name.to_string();
    let mut wrappers = Vec::new();
    let mut routes = Vec::new();
    for Handler {
        name,
        route,
        args,
        describe,
    } in handlers
    {
        let call_fn = format_ident!("__framework_call_{}", name);
        let describe_fn = format_ident!("__framework_describe_{}", name);
        let endpoint_fn = format_ident!("__framework_endpoint_{}", name);
        let span = name.span();
        let (lets, values) = arg_values(args);
        let output = method_output(block, name);
        // `Option<T>` (plain or in a `Result`): `None` is a 404.
        let finish = match (returns_result(&output), returns_option(&output)) {
            (true, false) => quote_spanned! {span=>
                ::framework::__private::finish(this.#name(#(#values),*).await, ctx)
            },
            (false, false) => quote_spanned! {span=>
                ::framework::__private::finish_value(this.#name(#(#values),*).await, ctx)
            },
            (true, true) => quote_spanned! {span=>
                ::framework::__private::finish_found(this.#name(#(#values),*).await, ctx)
            },
            (false, true) => quote_spanned! {span=>
                ::framework::__private::finish_found_value(this.#name(#(#values),*).await, ctx)
            },
        };
        wrappers.push(quote! {
            fn #call_fn<'a>(
                this: &'a #self_ty,
                ctx: &'a mut ::framework::Context,
            ) -> ::framework::__private::EndpointFuture<'a> {
                ::framework::__private::endpoint_future(async move {
                    #(#lets)*
                    #finish
                })
            }
            fn #describe_fn(d: &mut ::framework::__private::openapi::Operation<'_>) {
                #describe
            }
            fn #endpoint_fn(
                controller: &::std::sync::Arc<dyn ::std::any::Any + Send + Sync>,
            ) -> ::std::option::Option<::std::sync::Arc<dyn ::framework::Endpoint>> {
                ::framework::__private::method_endpoint::<#self_ty>(controller, #call_fn)
            }
        });
        let method = route.method.to_ascii_uppercase();
        let path = &route.path;
        let handler = format!("{controller_name}::{name}");
        let middleware = route.middleware.iter().map(Ident::to_string);
        routes.push(quote! {
            ::framework::__private::RouteDef {
                method: #method,
                path: #path,
                handler: #handler,
                middleware: &[#(#middleware),*],
                endpoint: #endpoint_fn,
                describe: #describe_fn,
            }
        });
    }
    quote! {
        const _: () = {
            #(#wrappers)*
            ::framework::__private::inventory::submit! {
                ::framework::__private::ControllerDef {
                    name: #controller_name,
                    prefix: #prefix,
                    middleware: &[#(#group_middleware),*],
                    build: ::framework::__private::build_controller::<#self_ty>,
                    routes: &[#(#routes),*],
                }
            }
        };
    }
}
