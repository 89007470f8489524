//! The generated code: per handler a call wrapper, a describe function and an endpoint
//! constructor, and the controller's `ControllerDef` submitted to `inventory`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, LitStr, Type};

use super::Handler;
use super::args::{Arg, ArgKind};
use super::attrs::ControllerArgs;
use crate::types::option_inner;

pub(super) fn registration(
    self_ty: &Type,
    self_name: &Ident,
    args: &ControllerArgs,
    handlers: &[Handler],
) -> TokenStream {
    let prefix = args.prefix.as_ref().map_or_else(String::new, LitStr::value);
    let group_middleware = args.middleware.iter().map(Ident::to_string);
    let controller_name = self_name.to_string();
    let this = quote!(#self_ty);
    let wrappers = handlers
        .iter()
        .map(|handler| handler_fns(&this, &quote!(), handler));
    let routes = handlers.iter().map(|handler| route_def(handler, &quote!()));
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

/// The hidden items `#[api]` adds to a trait: each handler's functions, generic over the
/// implementor (`Self`), and the trait's routes as the associated constant `__FRAMEWORK_API`.
pub(super) fn api_items(args: &ControllerArgs, handlers: &[Handler]) -> TokenStream {
    let prefix = args.prefix.as_ref().map_or_else(String::new, LitStr::value);
    let group_middleware = args.middleware.iter().map(Ident::to_string);
    let this = quote!(Self);
    let wrappers = handlers
        .iter()
        .map(|handler| handler_fns(&this, &quote!(Self::), handler));
    let routes = handlers
        .iter()
        .map(|handler| route_def(handler, &quote!(Self::)));
    quote! {
        #(#wrappers)*
        #[doc(hidden)]
        const __FRAMEWORK_API: ::framework::__private::ApiDef = ::framework::__private::ApiDef {
            prefix: #prefix,
            middleware: &[#(#group_middleware),*],
            routes: &[#(#routes),*],
        };
    }
}

/// The registration of an `#[api]` trait's implementor: the trait's routes, bound to it.
pub(super) fn api_registration(
    self_ty: &Type,
    self_name: &Ident,
    trait_path: &syn::Path,
    args: &ControllerArgs,
) -> TokenStream {
    let middleware = args.middleware.iter().map(Ident::to_string);
    let controller_name = self_name.to_string();
    let api = quote!(<#self_ty as #trait_path>::__FRAMEWORK_API);
    quote! {
        const _: () = {
            ::framework::__private::inventory::submit! {
                ::framework::__private::ControllerDef {
                    name: #controller_name,
                    prefix: #api.prefix,
                    middleware: ::framework::__private::api_middleware(
                        &[#(#middleware),*],
                        #api.middleware,
                    ),
                    build: ::framework::__private::build_controller::<#self_ty>,
                    routes: #api.routes,
                }
            }
        };
    }
}

/// A handler's call wrapper, describe function and endpoint constructor, for the receiver
/// type `this` (the controller's type, or `Self` inside a trait, where the functions are
/// named with `path`, `Self::`, before them).
fn handler_fns(this: &TokenStream, path: &TokenStream, handler: &Handler) -> TokenStream {
    let Handler {
        name,
        args,
        describe,
        ..
    } = handler;
    let call_fn = format_ident!("__framework_call_{}", name);
    let describe_fn = format_ident!("__framework_describe_{}", name);
    let endpoint_fn = format_ident!("__framework_endpoint_{}", name);
    let span = name.span();
    let (lets, values) = arg_values(args);
    // A `Result` (under any alias), an `Option` whose `None` is a 404, both, or a plain value:
    // told by the value's type (`framework::handler::returned`), not by the return type's name.
    let finish = quote_spanned! {span=>
        let __out = this.#name(#(#values),*).await;
        #[allow(unused_imports)]
        use ::framework::__private::returned::{
            ViaFound as _, ViaFoundResult as _, ViaResult as _, ViaValue as _,
        };
        (&&&&::framework::__private::returned::ReturnProbe::of(&__out))
            .tag()
            .finish(__out, ctx)
    };
    quote! {
        #[doc(hidden)]
        fn #call_fn<'a>(
            this: &'a #this,
            ctx: &'a mut ::framework::Context,
        ) -> ::framework::__private::EndpointFuture<'a> {
            ::framework::__private::endpoint_future(async move {
                #(#lets)*
                #finish
            })
        }
        #[doc(hidden)]
        fn #describe_fn(d: &mut ::framework::__private::openapi::Operation<'_>) {
            #describe
        }
        #[doc(hidden)]
        fn #endpoint_fn(
            controller: &::std::sync::Arc<dyn ::std::any::Any + Send + Sync>,
        ) -> ::std::option::Option<::std::sync::Arc<dyn ::framework::Endpoint>> {
            ::framework::__private::method_endpoint::<#this>(controller, #path #call_fn)
        }
    }
}

/// A handler's `RouteDef`; its functions are named with `path` before them (`Self::` in a
/// trait).
fn route_def(handler: &Handler, path: &TokenStream) -> TokenStream {
    let Handler { name, route, .. } = handler;
    let describe_fn = format_ident!("__framework_describe_{}", name);
    let endpoint_fn = format_ident!("__framework_endpoint_{}", name);
    let method = route.method.to_ascii_uppercase();
    let route_path = &route.path;
    let name = name.to_string();
    let middleware = route.middleware.iter().map(Ident::to_string);
    quote! {
        ::framework::__private::RouteDef {
            method: #method,
            path: #route_path,
            name: #name,
            middleware: &[#(#middleware),*],
            endpoint: #path #endpoint_fn,
            describe: #path #describe_fn,
        }
    }
}

/// The statements that make a handler's arguments (owned ones in order, the borrowed one
/// last), and the expressions passed to the method. The borrowed one is made last because it
/// holds a borrow of `ctx` until the call, and the owned ones each need `ctx` while they are
/// made.
fn arg_values(args: &[Arg]) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let mut lets = Vec::new();
    let mut borrowed = None;
    let mut values = Vec::new();
    for (index, Arg { ty, kind, .. }) in args.iter().enumerate() {
        let var = format_ident!("__arg{}", index);
        let span = ty.span();
        let make = match kind {
            ArgKind::FromRequest => quote_spanned! {span=>
                <#ty as ::framework::__private::FromRequest>::from_request(ctx)
                    .map_err(::core::convert::Into::<::framework::HttpError>::into)?
            },
            ArgKind::Named {
                source,
                name,
                optional,
            } => {
                let source = source.ident();
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
        // The rejection goes into an `HttpError`: the identity for an extractor that refuses
        // with one.
        lets.push(quote!(#[allow(clippy::useless_conversion)] let #var = #make;));
        values.push(quote!(#var));
    }
    lets.extend(borrowed);
    (lets, values)
}
