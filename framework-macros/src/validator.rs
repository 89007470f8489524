//! `#[validator(...)]`: a named validator function that declares its JSON Schema.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{Expr, FnArg, ItemFn, ReturnType, Type};

/// The schema keywords a validator may declare, as written in the attribute and in JSON Schema.
const KEYWORDS: [(&str, &str); 6] = [
    ("min_length", "minLength"),
    ("max_length", "maxLength"),
    ("pattern", "pattern"),
    ("minimum", "minimum"),
    ("maximum", "maximum"),
    ("format", "format"),
];

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let function: ItemFn = match syn::parse2(item.clone()) {
        Ok(function) => function,
        Err(e) => {
            let error = e.to_compile_error();
            let mut out = item;
            out.extend(error);
            return out;
        }
    };
    match generate(attr, &function) {
        Ok(tokens) => tokens,
        // The function stays as written, so its callers and the derive still compile.
        Err(e) => {
            let error = e.to_compile_error();
            quote! { #error #function }
        }
    }
}

fn parse_keywords(attr: TokenStream) -> syn::Result<Vec<(&'static str, Expr)>> {
    let mut keywords = Vec::new();
    let parser = syn::meta::parser(|meta| {
        let name = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        let Some((_, keyword)) = KEYWORDS.iter().find(|(written, _)| *written == name) else {
            let known: Vec<&str> = KEYWORDS.iter().map(|(written, _)| *written).collect();
            return Err(meta.error(format!(
                "unknown schema keyword `{name}`; a validator may declare `{}`",
                known.join("`, `")
            )));
        };
        keywords.push((*keyword, meta.value()?.parse::<Expr>()?));
        Ok(())
    });
    syn::parse::Parser::parse2(parser, attr)?;
    Ok(keywords)
}

fn generate(attr: TokenStream, function: &ItemFn) -> syn::Result<TokenStream> {
    let keywords = parse_keywords(attr)?;
    let signature = &function.sig;
    if !signature.generics.params.is_empty() || signature.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            signature.generics.span(),
            "a `#[validator]` function cannot be generic: it takes a reference to one type",
        ));
    }
    if let Some(asyncness) = &signature.asyncness {
        return Err(syn::Error::new(
            asyncness.span(),
            "a `#[validator]` function cannot be async",
        ));
    }
    let inputs: Vec<&FnArg> = signature.inputs.iter().collect();
    let argument = match inputs.as_slice() {
        [FnArg::Typed(argument)] => argument,
        [] => {
            return Err(syn::Error::new(
                signature.paren_token.span.join(),
                "a `#[validator]` function takes one argument, a reference to the value: \
                 `fn xName(value: &str) -> Result<(), &'static str>`",
            ));
        }
        [_, extra, ..] => {
            return Err(syn::Error::new(
                extra.span(),
                "a `#[validator]` function takes one argument, a reference to the value",
            ));
        }
        [receiver] => {
            return Err(syn::Error::new(
                receiver.span(),
                "a `#[validator]` is a free function, not a method",
            ));
        }
    };
    // The value by reference: the derive lends each field, it never gives it away.
    if !matches!(&*argument.ty, Type::Reference(_)) {
        let ty = &argument.ty;
        let written = quote!(#ty).to_string().replace(' ', "");
        let or_str = if written == "String" {
            " (or `&str`)"
        } else {
            ""
        };
        return Err(syn::Error::new(
            argument.ty.span(),
            format!(
                "a `#[validator]` function takes a reference to the value, \
                 `value: &{written}`{or_str}; the signature is `fn {}(value: &T) -> Result<(), \
                 E>` with `E: Display`",
                signature.ident
            ),
        ));
    }
    let output = match &signature.output {
        ReturnType::Type(_, ty) => match impl_token(ty) {
            None if !crate::types::returns_result(ty) => {
                return Err(syn::Error::new(
                    ty.span(),
                    format!(
                        "a `#[validator]` function returns `Result<(), E>` with `E: Display`, \
                         not `{}`: `Ok(())` for a valid value, `Err(\"why\")` for another; the \
                         signature is `fn {}(value: &T) -> Result<(), E>`",
                        quote!(#ty).to_string().replace(' ', ""),
                        signature.ident
                    ),
                ));
            }
            None => ty,
            Some(span) => {
                return Err(syn::Error::new(
                    span,
                    "a `#[validator]` function returns `Result<(), E>` with a named error type \
                     (`&'static str`, `String`, `Cow<'static, str>`, ...), not `impl Display`",
                ));
            }
        },
        ReturnType::Default => {
            return Err(syn::Error::new(
                signature.ident.span(),
                "a `#[validator]` function returns `Result<(), E>`",
            ));
        }
    };
    let argument_type = &argument.ty;
    let name = &signature.ident;
    let check = format_ident!("__framework_check_{}", name);
    let vis = &function.vis;
    let docs = function.attrs.iter().filter(|a| a.path().is_ident("doc"));
    let other_attrs = function.attrs.iter().filter(|a| !a.path().is_ident("doc"));
    let mut checker = function.clone();
    checker.sig.ident = check.clone();
    checker.vis = syn::Visibility::Inherited;
    checker.attrs = other_attrs.cloned().collect();
    let writes = keywords.iter().map(|(keyword, value)| {
        quote! {
            ::framework::__private::constrain_property(
                property, #keyword, ::framework::__private::json!(#value),
            );
        }
    });
    Ok(quote! {
        #(#docs)*
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug)]
        #vis struct #name;

        const _: () = {
            #[allow(non_snake_case)]
            #checker

            /// Called like the function it was written as: `name(value)`.
            impl ::std::ops::Deref for #name {
                type Target = fn(#argument_type) -> #output;
                fn deref(&self) -> &Self::Target {
                    const CHECK: fn(#argument_type) -> #output = #check;
                    &CHECK
                }
            }

            impl ::framework::validate::ValidatorSchema for #name {
                fn describe(&self, property: &mut ::framework::__private::JsonMap) {
                    let _ = &property;
                    #(#writes)*
                }
            }
        };
    })
}

/// The `impl` token of an `impl Trait` anywhere in a type (a function pointer cannot return
/// one).
fn impl_token(ty: &Type) -> Option<proc_macro2::Span> {
    fn find(tokens: TokenStream) -> Option<proc_macro2::Span> {
        tokens.into_iter().find_map(|token| match token {
            proc_macro2::TokenTree::Ident(ident) if ident == "impl" => Some(ident.span()),
            proc_macro2::TokenTree::Group(group) => find(group.stream()),
            _ => None,
        })
    }
    find(quote!(#ty))
}
