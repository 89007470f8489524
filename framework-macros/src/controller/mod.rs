//! `#[controller]` and the route attributes it consumes.
//!
//! By phase: `attrs` parses the attributes, `args` works out how each handler argument is made,
//! `openapi` writes each handler's description and `codegen` the wrappers and the registration.
//! This module takes the impl block apart and puts the phases together.

mod api;
mod args;
mod attrs;
mod client;
mod codegen;
mod openapi;

pub(crate) use api::expand as expand_api;

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Ident, ImplItem, Item, LitStr, Signature, Type};

use self::args::Arg;
use self::attrs::{ControllerArgs, RouteArgs};
use crate::types::last_segment;

/// A handler method with its route and its arguments after `&self`.
struct Handler {
    name: Ident,
    route: RouteArgs,
    args: Vec<Arg>,
    /// The written return type; `None` when there is none (`()`).
    output: Option<Type>,
    /// The body of its OpenAPI description function.
    describe: TokenStream,
    /// Its doc comment and `#[allow(..)]` attributes, for the generated client's method.
    docs: Vec<Attribute>,
}

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

/// Emits the item again next to the errors, so the rest of the crate still type-checks.
fn reemit(item: impl quote::ToTokens, err: &syn::Error) -> TokenStream {
    let errors = err.to_compile_error();
    quote!(#item #errors)
}

pub(crate) fn outside_controller(verb: &str, item: TokenStream) -> TokenStream {
    let err = syn::Error::new(
        Span::call_site(),
        format!(
            "`#[{verb}]` is only valid on a method inside a `#[controller]` impl block or an \
             `#[api]` trait"
        ),
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
    let args = syn::parse2::<ControllerArgs>(attr).unwrap_or_else(|e| {
        errors.push(e);
        ControllerArgs::default()
    });
    if block.trait_.is_some() {
        return api::expand_impl(&args, block, errors);
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
            ImplItem::Fn(method) => {
                take_route(&mut method.attrs, &mut method.sig, &prefix, &mut errors)
            }
            _ => None,
        })
        .collect();
    let self_name = last_segment(&block.self_ty).map(|segment| segment.ident.clone());
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
    let registration = codegen::registration(&block.self_ty, &self_name, &args, &handlers);
    quote! {
        #block
        #registration
    }
}

/// Takes the route attribute off a method (of an impl block or a trait) and checks the
/// method's shape.
fn take_route(
    attrs: &mut Vec<Attribute>,
    sig: &mut Signature,
    prefix: &str,
    errors: &mut Errors,
) -> Option<Handler> {
    let mut route = None;
    let mut kept = Vec::with_capacity(attrs.len());
    for attr in std::mem::take(attrs) {
        match attrs::route_method(&attr) {
            Some(verb) if route.is_some() => errors.push(syn::Error::new(
                attr.span(),
                format!("`{verb}`: a handler has exactly one route attribute"),
            )),
            Some(verb) => match attrs::parse_route_args(verb, &attr) {
                Ok(args) => route = Some(args),
                Err(e) => errors.push(e),
            },
            None => kept.push(attr),
        }
    }
    *attrs = kept;
    let route = route?;
    let name = sig.ident.clone();
    let mut ok = true;
    if sig.asyncness.is_none() {
        errors.push(syn::Error::new(
            sig.fn_token.span,
            format!("handler `{name}` must be an `async fn`"),
        ));
        ok = false;
    }
    if !sig.generics.params.is_empty() {
        errors.push(syn::Error::new(
            sig.generics.span(),
            format!("handler `{name}` cannot be generic"),
        ));
        ok = false;
    }
    let takes_self = matches!(
        sig.inputs.first(),
        Some(FnArg::Receiver(r)) if r.reference.is_some() && r.mutability.is_none()
    );
    if !takes_self {
        // The parentheses, not `inputs`: an empty list has no span of its own and would point
        // at `#[controller]`.
        errors.push(syn::Error::new(
            sig.paren_token.span.join(),
            format!(
                "handler `{name}` must take `&self` first, then its arguments \
                 (e.g. `ctx: &mut Context`, `body: Json<T>`, `id: u64`)"
            ),
        ));
        ok = false;
    }
    // The path the app serves: the prefix and the route's path joined as `build()` joins them,
    // checked as a whole (the count of params includes the prefix's).
    let full_path = route_pattern::join(prefix, &route.path.value());
    if let Err(err) = route_pattern::validate(&full_path) {
        errors.push(syn::Error::new(route.path.span(), err));
    }
    let args = if takes_self {
        args::analyse_args(sig, &full_path, errors)
    } else {
        Vec::new()
    };
    let output = match &sig.output {
        syn::ReturnType::Default => None,
        syn::ReturnType::Type(_, ty) => Some((**ty).clone()),
    };
    let describe = openapi::describe_body(attrs, &route, &args, output.as_ref());
    // The doc comment, and the lint levels that go with it (`#[allow(rustdoc::..)]`).
    let docs = attrs
        .iter()
        .filter(|attr| attr.path().is_ident("doc") || attr.path().is_ident("allow"))
        .cloned()
        .collect();
    ok.then_some(Handler {
        name,
        route,
        args,
        output,
        describe,
        docs,
    })
}
