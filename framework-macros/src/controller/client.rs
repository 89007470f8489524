//! The typed client of an `#[api]` trait: a `<Trait>Client` with one async method per route,
//! taking the request-side arguments and returning the success value or a `ClientError`.
//! Generated inside `framework::__private::if_client!`, so it exists when `framework`'s
//! `client` feature is on.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{ItemTrait, Type};

use super::Handler;
use super::args::{Arg, ArgKind, Source};
use super::attrs::ControllerArgs;
use crate::types::{is_named, option_inner, result_value, returns_result, wrapped};

/// Argument types that read the body in a way the client does not write.
const UNSENDABLE: [&str; 1] = ["Multipart"];

/// How a route's success is read.
enum Answer<'t> {
    /// A JSON value of this type.
    Json(&'t Type),
    /// A JSON value of this type, `None` for a 404.
    Found(&'t Type),
    /// Nothing is read.
    Empty,
    /// Text.
    Text,
    /// Bytes.
    Bytes,
}

/// The client of `api`: its struct and methods, or the errors of the routes it cannot express.
pub(super) fn client(
    api: &ItemTrait,
    args: &ControllerArgs,
    handlers: &[Handler],
) -> syn::Result<TokenStream> {
    let vis = &api.vis;
    let trait_name = &api.ident;
    let client_name = format_ident!("{}Client", trait_name);
    let prefix = args
        .prefix
        .as_ref()
        .map_or_else(String::new, syn::LitStr::value);
    let mut errors: Option<syn::Error> = None;
    let mut push = |err: syn::Error| match &mut errors {
        Some(all) => all.combine(err),
        None => errors = Some(err),
    };
    let mut methods = Vec::new();
    for handler in handlers {
        match method(vis, &prefix, handler) {
            Ok(method) => methods.push(method),
            Err(err) => push(err),
        }
    }
    if let Some(err) = errors {
        return Err(err);
    }
    let doc = format!(
        "The typed client of [`{trait_name}`]: one method per route, its request-side \
         arguments in their types, its success value or a \
         [`ClientError`](::framework::client::ClientError)."
    );
    Ok(quote! {
        ::framework::__private::if_client! {
            #[doc = #doc]
            #[derive(Clone, Debug)]
            #vis struct #client_name {
                client: ::framework::client::ApiClient,
            }

            impl #client_name {
                /// A client of the service at `base_url` (`http://host[:port][/base]`), with the
                /// defaults of `framework::client::ClientBuilder`.
                #vis fn new(
                    base_url: &str,
                ) -> ::core::result::Result<Self, ::framework::client::ClientError> {
                    ::framework::client::ApiClient::new(base_url).map(Self::from_client)
                }

                /// The routes' client over `client` (built with
                /// `framework::client::ApiClient::builder()`, or in process with
                /// `framework::client::ApiClient::in_process`).
                #vis fn from_client(client: ::framework::client::ApiClient) -> Self {
                    Self { client }
                }

                /// The client the calls go through.
                #vis fn api_client(&self) -> &::framework::client::ApiClient {
                    &self.client
                }

                #(#methods)*
            }
        }
    })
}

/// One route's client method.
fn method(vis: &syn::Visibility, prefix: &str, handler: &Handler) -> syn::Result<TokenStream> {
    let Handler {
        name,
        route,
        args,
        output,
        docs,
        ..
    } = handler;
    let method = format_ident!("{}", route.method.to_ascii_uppercase());
    let path = route_pattern::join(prefix, &route.path.value());
    // No argument can be named `*`: the call could never fill it.
    if route_pattern::param_names(&path).any(|name| name == route_pattern::WILDCARD) {
        return Err(syn::Error::new(
            route.path.span(),
            "the generated client cannot fill a bare `*` wildcard: name it (`*rest`) and take \
             it as an argument (`rest: String`), or declare this route in a `#[controller]` \
             impl block of the implementing type instead of the `#[api]` trait",
        ));
    }
    let errors = &route.errors;
    let mut params = Vec::new();
    let mut steps = Vec::new();
    for (index, arg) in args.iter().enumerate() {
        let Some((param, step)) = argument(index, arg)? else {
            continue;
        };
        params.push(param);
        steps.push(step);
    }
    // The call that reads the answer is spanned at the answer type: a type the client cannot
    // read is reported there, once.
    let (answer_ty, send) = match answer(output.as_ref())? {
        Answer::Json(ty) => (
            quote!(#ty),
            quote_spanned!(ty.span()=> request.send::<#ty>().await),
        ),
        Answer::Found(ty) => (
            quote!(::core::option::Option<#ty>),
            quote_spanned!(ty.span()=> request.send_found::<#ty>().await),
        ),
        Answer::Empty => (quote!(()), quote!(request.send_empty().await)),
        Answer::Text => (
            quote!(::std::string::String),
            quote!(request.send_text().await),
        ),
        Answer::Bytes => (
            quote!(::framework::client::Bytes),
            quote!(request.send_bytes().await),
        ),
    };
    Ok(quote! {
        #(#docs)*
        #[allow(clippy::needless_pass_by_value)]
        #vis async fn #name(
            &self,
            #(#params),*
        ) -> ::core::result::Result<#answer_ty, ::framework::client::ClientError> {
            let request = self
                .client
                .request(::framework::http::Method::#method, #path)
                .declared(&[#(#errors),*]);
            #(let request = #steps;)*
            #send
        }
    })
}

/// A request-side argument: the client method's parameter and the step that writes it;
/// `None` for a server-side one (the context, state, borrowed values, extractors the server
/// makes from what it knows).
fn argument(index: usize, arg: &Arg) -> syn::Result<Option<(TokenStream, TokenStream)>> {
    let Arg { ty, kind, name } = arg;
    let var = name
        .clone()
        .unwrap_or_else(|| format_ident!("arg{}", index));
    let param = quote!(#var: #ty);
    let step = match kind {
        ArgKind::Named {
            source,
            name,
            optional,
        } => {
            let write = match source {
                Source::Path => quote!(path_param),
                Source::Header => quote!(header),
                Source::Cookie => quote!(cookie),
            };
            if *optional {
                quote! {
                    match &#var {
                        ::core::option::Option::Some(value) => request.#write(#name, value),
                        ::core::option::Option::None => request,
                    }
                }
            } else {
                quote_spanned!(ty.span()=> request.#write(#name, &#var))
            }
        }
        ArgKind::FromRequest => {
            if wrapped(ty, "Json").is_some() {
                quote!(request.json(&#var))
            } else if wrapped(ty, "Form").is_some() {
                quote!(request.form(&#var.0))
            } else if wrapped(ty, "Query").is_some() {
                quote!(request.query(&#var.0))
            } else if wrapped(ty, "Path").is_some() {
                quote!(request.path_params(&#var.0))
            } else if let Some(what) = UNSENDABLE.iter().find(|what| is_named(ty, what)) {
                return Err(syn::Error::new(
                    ty.span(),
                    format!(
                        "the generated client cannot send a `{what}` argument: declare this \
                         route in a `#[controller]` impl block of the implementing type instead \
                         of the `#[api]` trait, or take a `Json<T>` or `Form<T>`"
                    ),
                ));
            } else {
                return Ok(None);
            }
        }
        ArgKind::State | ArgKind::Borrowed { .. } => return Ok(None),
    };
    Ok(Some((param, step)))
}

/// How the route's success value is read, from its written return type. The client method's
/// signature is written here, before any type is known, so the wrappers whose value is read
/// (`Result`, `Option`, `Json`, `Created`, `NoContent`) and the standard text and bytes types
/// are told by their names; any other type is read through `ClientAnswer`, which refuses what
/// has no value to read.
fn answer(output: Option<&Type>) -> syn::Result<Answer<'_>> {
    let Some(ty) = output else {
        return Ok(Answer::Empty);
    };
    let value = if returns_result(ty) {
        match result_value(ty) {
            Some(value) => value,
            None => return Ok(Answer::Empty),
        }
    } else {
        ty
    };
    let value = wrapped(value, "Json").unwrap_or(value);
    if let Some(inner) = option_inner(value) {
        return match kind(wrapped(inner, "Json").unwrap_or(inner))? {
            Answer::Json(ty) => Ok(Answer::Found(ty)),
            _ => Err(syn::Error::new(
                inner.span(),
                "the generated client reads an `Option<T>` answer as JSON: return \
                 `Option<T>` of a `Deserialize` type",
            )),
        };
    }
    kind(value)
}

/// The reading of a success value's type.
fn kind(ty: &Type) -> syn::Result<Answer<'_>> {
    if let Some(inner) = wrapped(ty, "Created") {
        return kind(wrapped(inner, "Json").unwrap_or(inner));
    }
    if is_named(ty, "NoContent") || matches!(ty, Type::Tuple(t) if t.elems.is_empty()) {
        return Ok(Answer::Empty);
    }
    let text = match ty {
        Type::Reference(r) => is_named(&r.elem, "str"),
        _ => is_named(ty, "String") || is_named(ty, "Cow"),
    };
    if text {
        return Ok(Answer::Text);
    }
    if is_named(ty, "Bytes") || wrapped(ty, "Vec").is_some_and(|t| is_named(t, "u8")) {
        return Ok(Answer::Bytes);
    }
    // Anything else is read through `ClientAnswer` (a `Deserialize` type): a stream, a file, a
    // redirect or an upgrade is none, and the error is reported at this type.
    if matches!(ty, Type::ImplTrait(_) | Type::Reference(_)) {
        return Err(syn::Error::new(
            ty.span(),
            "the generated client reads an answer into an owned type: return a named type \
             that implements `Deserialize` (e.g. `Result<User>`)",
        ));
    }
    Ok(Answer::Json(ty))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(ty: &str) -> &'static str {
        let ty: Type = syn::parse_str(ty).unwrap();
        let ty = Box::leak(Box::new(ty));
        match answer(Some(ty)) {
            Ok(Answer::Json(_)) => "json",
            Ok(Answer::Found(_)) => "found",
            Ok(Answer::Empty) => "empty",
            Ok(Answer::Text) => "text",
            Ok(Answer::Bytes) => "bytes",
            Err(_) => "error",
        }
    }

    #[test]
    fn answers_by_written_type() {
        for (ty, expected) in [
            ("Result<Me>", "json"),
            ("Result<Created<User>>", "json"),
            ("Result<Json<User>>", "json"),
            ("framework::Result<Option<Note>>", "found"),
            ("Result<NoContent>", "empty"),
            ("Result", "empty"),
            ("()", "empty"),
            ("String", "text"),
            ("Result<&'static str>", "text"),
            ("Result<Bytes>", "bytes"),
            ("Vec<u8>", "bytes"),
            ("Vec<Note>", "json"),
            ("Result<Option<String>>", "error"),
        ] {
            assert_eq!(read(ty), expected, "{ty}");
        }
    }
}
