//! `#[api]` on a trait, and `#[controller]` on an impl of such a trait.
//!
//! The trait's methods carry the route attributes an impl block's would; each is parsed by the
//! same code (`take_route`), so the routes, their arguments' extraction and validation, and
//! their OpenAPI description are the ones the impl-block form gives. What differs is where
//! the generated code lives: the call wrapper, the describe function and the endpoint
//! constructor of each route become hidden provided functions of the trait, generic over the
//! implementor (`Self`), and the routes a hidden associated constant, `__FRAMEWORK_API`. The
//! `#[controller] impl Trait for Type` then only submits the implementor's `ControllerDef`
//! with the trait's routes: the per-request code is the impl-block form's, monomorphised for
//! `Type`.
//!
//! A route's `async fn` becomes `fn .. -> impl Future<Output = R> + Send` in the trait, so the
//! generic call wrapper can hold the future across the request (the implementor still writes
//! `async fn`); the trait gets the supertraits `Send + Sync + Sized + 'static` a controller
//! needs.

use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned;
use syn::{Item, ItemImpl, ItemTrait, TraitItem, parse_quote};

use super::attrs::{ControllerArgs, route_method};
use super::{Errors, Handler, client, codegen, reemit, take_route};
use crate::types::last_segment;

/// `#[api(prefix = "/users", middleware(session))] trait UserApi { .. }`.
pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let parsed: Item = match syn::parse2(item.clone()) {
        Ok(item) => item,
        Err(e) => return reemit(item, &e),
    };
    let Item::Trait(mut api) = parsed else {
        let err = syn::Error::new(
            parsed.span(),
            "`#[api]` must be placed on a trait, e.g. `trait UserApi { ... }`",
        );
        return reemit(parsed, &err);
    };
    let mut errors = Errors::default();
    let args = syn::parse2::<ControllerArgs>(attr).unwrap_or_else(|e| {
        errors.push(e);
        ControllerArgs::default()
    });
    if !api.generics.params.is_empty() {
        errors.push(syn::Error::new(
            api.generics.span(),
            "an `#[api]` trait cannot be generic",
        ));
    }
    let prefix = args
        .prefix
        .as_ref()
        .map_or_else(String::new, syn::LitStr::value);
    let mut handlers: Vec<Handler> = Vec::new();
    for item in &mut api.items {
        let TraitItem::Fn(method) = item else {
            continue;
        };
        if let Some(handler) = take_route(&mut method.attrs, &mut method.sig, &prefix, &mut errors)
        {
            make_send_future(method);
            handlers.push(handler);
        }
    }
    let client = match client::client(&api, &args, &handlers) {
        Ok(client) => client,
        Err(err) => {
            errors.push(err);
            TokenStream::new()
        }
    };
    if let Err(err) = errors.finish() {
        return reemit(&api, &err);
    }
    api.supertraits.push(parse_quote!(::core::marker::Send));
    api.supertraits.push(parse_quote!(::core::marker::Sync));
    api.supertraits.push(parse_quote!(::core::marker::Sized));
    api.supertraits.push(parse_quote!('static));
    let items = codegen::api_items(&args, &handlers);
    let hidden: ItemTrait = parse_quote!(trait __Hidden { #items });
    api.items.extend(hidden.items);
    quote! {
        #api
        #client
    }
}

/// `async fn name(..) -> R` as `fn name(..) -> impl Future<Output = R> + Send`; a default
/// body becomes an `async move` block.
fn make_send_future(method: &mut syn::TraitItemFn) {
    method.sig.asyncness = None;
    let output = match &method.sig.output {
        syn::ReturnType::Default => quote!(()),
        syn::ReturnType::Type(_, ty) => quote!(#ty),
    };
    method.sig.output = parse_quote! {
        -> impl ::core::future::Future<Output = #output> + ::core::marker::Send
    };
    if let Some(block) = &method.default {
        method.default = Some(parse_quote!({ async move #block }));
    }
}

/// `#[controller(middleware(..))] impl UserApi for UserController { .. }`: the trait's routes,
/// served by this type.
pub(super) fn expand_impl(
    args: &ControllerArgs,
    mut block: ItemImpl,
    mut errors: Errors,
) -> TokenStream {
    // Route attributes are the trait's: reported, and taken off so the item re-emitted with
    // the errors has no unknown attribute.
    for item in &mut block.items {
        let syn::ImplItem::Fn(method) = item else {
            continue;
        };
        method.attrs.retain(|attr| {
            let Some(verb) = route_method(attr) else {
                return true;
            };
            errors.push(syn::Error::new(
                attr.span(),
                format!(
                    "`#[{verb}]`: the routes of an `#[api]` trait are declared on the trait; \
                     its impl only implements the methods"
                ),
            ));
            false
        });
    }
    let Some((bang, trait_path, _)) = &block.trait_ else {
        return quote!(#block);
    };
    if let Some(bang) = bang {
        errors.push(syn::Error::new(
            bang.span(),
            "`#[controller]` serves an `#[api]` trait: a negative impl has no routes",
        ));
    }
    if let Some(prefix) = &args.prefix {
        errors.push(syn::Error::new(
            prefix.span(),
            "the routes' prefix is the trait's: `#[api(prefix = \"...\")]`",
        ));
    }
    if !block.generics.params.is_empty() {
        errors.push(syn::Error::new(
            block.generics.span(),
            "a controller cannot be generic",
        ));
    }
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
    let registration = codegen::api_registration(&block.self_ty, &self_name, trait_path, args);
    quote! {
        #block
        #registration
    }
}
