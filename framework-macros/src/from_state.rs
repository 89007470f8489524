//! `#[derive(FromState)]`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Data, DeriveInput, Fields, Index};

pub(crate) fn expand(item: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(item) {
        Ok(input) => input,
        Err(e) => return e.to_compile_error(),
    };
    let ident = &input.ident;
    let Data::Struct(data) = &input.data else {
        let error = syn::Error::new(
            ident.span(),
            "`FromState` can only be derived for a struct: its fields are taken from the state",
        )
        .to_compile_error();
        // With a placeholder impl, the only error is this one (no follow-on "`FromState` is not
        // implemented" where the controller is registered). It never runs.
        return quote! {
            #error
            impl ::framework::FromState for #ident {
                fn from_state(_: &::framework::State) -> ::framework::Result<Self> {
                    ::std::unreachable!()
                }
            }
        };
    };
    let field = |ty: &syn::Type, name: String| {
        quote! { ::framework::__private::state_field::<#ty>(state, #name)? }
    };
    let body = match &data.fields {
        Fields::Unit => quote!(Self),
        Fields::Named(fields) => {
            let values = fields.named.iter().filter_map(|f| {
                let name = f.ident.as_ref()?;
                let value = field(&f.ty, name.to_string());
                Some(quote!(#name: #value))
            });
            quote!(Self { #(#values),* })
        }
        Fields::Unnamed(fields) => {
            let values = fields
                .unnamed
                .iter()
                .enumerate()
                .map(|(i, f)| field(&f.ty, Index::from(i).index.to_string()));
            quote!(Self(#(#values),*))
        }
    };
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        impl #impl_generics ::framework::FromState for #ident #ty_generics #where_clause {
            fn from_state(state: &::framework::State) -> ::framework::Result<Self> {
                ::std::result::Result::Ok(#body)
            }
        }
    }
}
