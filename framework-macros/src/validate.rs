//! `#[derive(Validate)]`.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Expr, Fields, Ident, LitStr, Path};

use crate::types::is_named;

/// One validator on a field, parsed.
enum Rule {
    Length {
        min: Option<Expr>,
        max: Option<Expr>,
    },
    Range {
        min: Expr,
        max: Expr,
    },
    NonEmpty,
    Hex,
    Ascii,
    Charset(LitStr),
    OneOf(Vec<LitStr>),
    /// A user function, called by path.
    Custom(Path),
}

impl Rule {
    /// The code reported on failure: the rule's or the function's name.
    fn code(&self) -> String {
        match self {
            Rule::Length { .. } => "length".into(),
            Rule::Range { .. } => "range".into(),
            Rule::NonEmpty => "non_empty".into(),
            Rule::Hex => "hex".into(),
            Rule::Ascii => "ascii".into(),
            Rule::Charset(_) => "charset".into(),
            Rule::OneOf(_) => "one_of".into(),
            Rule::Custom(path) => path
                .segments
                .last()
                .map_or_else(String::new, |s| s.ident.to_string()),
        }
    }

    /// The schema keywords this rule sets on the field's property: `constrain(schema, name,
    /// key, value)` calls.
    fn describe(&self, name: &str) -> TokenStream {
        let set = |key: &str, value: TokenStream| {
            quote! {
                ::framework::__private::constrain(schema, #name, #key, ::framework::__private::json!(#value));
            }
        };
        match self {
            Rule::Length { min, max } => {
                let mut out = TokenStream::new();
                if let Some(min) = min {
                    out.extend(set("minLength", quote!(#min)));
                }
                if let Some(max) = max {
                    out.extend(set("maxLength", quote!(#max)));
                }
                out
            }
            Rule::Range { min, max } => {
                let mut out = set("minimum", quote!(#min));
                out.extend(set("maximum", quote!(#max)));
                out
            }
            Rule::NonEmpty => set("minLength", quote!(1)),
            Rule::Hex => set("pattern", quote!("^[0-9a-fA-F]*$")),
            Rule::Ascii => set("pattern", quote!("^[\\x00-\\x7F]*$")),
            Rule::Charset(chars) => set(
                "pattern",
                quote!(::framework::__private::charset_pattern(#chars)),
            ),
            Rule::OneOf(options) => set("enum", quote!([#(#options),*])),
            Rule::Custom(path) => quote! {
                {
                    use ::framework::__private::{ViaPlainFunction as _, ViaValidatorSchema as _};
                    (&::framework::__private::NamedValidator(&#path)).describe_field(schema, #name);
                }
            },
        }
    }

    /// The call checking `value` (a reference to the field).
    fn call(&self, span: proc_macro2::Span) -> TokenStream {
        let rules = quote!(::framework::__private::rules);
        match self {
            Rule::Length { min, max } => {
                let min = min
                    .as_ref()
                    .map_or_else(|| quote!(0), ToTokens::to_token_stream);
                let max = max
                    .as_ref()
                    .map_or_else(|| quote!(usize::MAX), ToTokens::to_token_stream);
                quote_spanned!(span=> #rules::length(value, #min, #max))
            }
            Rule::Range { min, max } => {
                quote_spanned!(span=> #rules::range(value, &(#min), &(#max)))
            }
            Rule::NonEmpty => quote_spanned!(span=> #rules::non_empty(value)),
            Rule::Hex => quote_spanned!(span=> #rules::hex(value)),
            Rule::Ascii => quote_spanned!(span=> #rules::ascii(value)),
            // The set is a constant, made at compile time: no search of it per character.
            Rule::Charset(set) => quote_spanned!(span=> {
                const SET: #rules::Charset<'static> = #rules::Charset::new(#set);
                SET.check(value)
            }),
            Rule::OneOf(options) => quote_spanned!(span=> #rules::one_of(value, &[#(#options),*])),
            // Taken as a value, as the schema description takes it, so a misspelled name is one
            // error ("cannot find value"), not one per use.
            Rule::Custom(path) => quote_spanned!(path.span()=> {
                let check = &#path;
                check(value)
            }),
        }
    }
}

fn parse_bounds(
    meta: &syn::meta::ParseNestedMeta<'_>,
    rule: &str,
) -> syn::Result<(Option<Expr>, Option<Expr>)> {
    let (mut min, mut max) = (None, None);
    meta.parse_nested_meta(|m| {
        if m.path.is_ident("min") {
            min = Some(m.value()?.parse()?);
        } else if m.path.is_ident("max") {
            max = Some(m.value()?.parse()?);
        } else {
            let key = m.path.to_token_stream().to_string();
            return Err(syn::Error::new(
                m.path.span(),
                format!("unknown key `{key}` in `{rule}`; expected `min` or `max`"),
            ));
        }
        Ok(())
    })?;
    Ok((min, max))
}

fn parse_strings(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<Vec<LitStr>> {
    let content;
    syn::parenthesized!(content in meta.input);
    let list = content.parse_terminated(|i| i.parse::<LitStr>(), syn::Token![,])?;
    Ok(list.into_iter().collect())
}

fn parse_rules(attr: &syn::Attribute) -> syn::Result<Vec<(Rule, proc_macro2::Span)>> {
    let mut rules = Vec::new();
    attr.parse_nested_meta(|meta| {
        let span = meta.path.span();
        let name = meta
            .path
            .get_ident()
            .map(Ident::to_string)
            .unwrap_or_default();
        let rule = match name.as_str() {
            "length" => {
                let (min, max) = parse_bounds(&meta, "length")?;
                Rule::Length { min, max }
            }
            "range" => {
                let (min, max) = parse_bounds(&meta, "range")?;
                match (min, max) {
                    (Some(min), Some(max)) => Rule::Range { min, max },
                    _ => return Err(meta.error("`range` needs both `min` and `max`")),
                }
            }
            "non_empty" => Rule::NonEmpty,
            "hex" => Rule::Hex,
            "ascii" => Rule::Ascii,
            "charset" => {
                let mut sets = parse_strings(&meta)?;
                if sets.len() != 1 {
                    return Err(meta.error("`charset` takes one string: `charset(\"abc\")`"));
                }
                Rule::Charset(sets.remove(0))
            }
            "one_of" => Rule::OneOf(parse_strings(&meta)?),
            _ => {
                if !meta.input.is_empty() && !meta.input.peek(syn::Token![,]) {
                    return Err(unknown_rule(&meta.path, &name));
                }
                Rule::Custom(meta.path)
            }
        };
        rules.push((rule, span));
        Ok(())
    })?;
    Ok(rules)
}

/// The built-in rules, as written in `#[validate(..)]`.
const BUILT_IN: [(&str, &str); 7] = [
    ("length", "length(min = 2, max = 20)"),
    ("range", "range(min = 1, max = 10)"),
    ("non_empty", "non_empty"),
    ("hex", "hex"),
    ("ascii", "ascii"),
    ("charset", "charset(\"abc\")"),
    ("one_of", "one_of(\"a\", \"b\")"),
];

/// A name followed by arguments that is not a built-in rule: most likely a misspelled one, so
/// the message lists the built-ins (suggesting the closest) and says how a custom validator is
/// written, rather than letting it become a call to a function that does not exist.
fn unknown_rule(path: &Path, name: &str) -> syn::Error {
    let listed: Vec<&str> = BUILT_IN.iter().map(|(_, usage)| *usage).collect();
    let closest = BUILT_IN
        .iter()
        .map(|(rule, _)| (edit_distance(name, rule), *rule))
        .min()
        .filter(|(distance, _)| *distance <= 2)
        .map(|(_, rule)| format!(" (did you mean `{rule}`?)"))
        .unwrap_or_default();
    let shown = if name.is_empty() {
        path.to_token_stream().to_string()
    } else {
        name.to_owned()
    };
    syn::Error::new(
        path.span(),
        format!(
            "unknown rule `{shown}`{closest}; the built-in rules are `{}`; a custom validator is \
             a function `fn(&T) -> Result<(), impl Display>` named without arguments, e.g. \
             `#[validate(xUserAccount)]`",
            listed.join("`, `")
        ),
    )
}

/// Levenshtein distance, for "did you mean" on a handful of short names.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// The JSON name of a field: its `#[serde(rename = "...")]` if any, else its Rust name.
fn json_name(field: &syn::Field, ident: &Ident) -> String {
    let mut name = ident.to_string();
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        // Other serde keys are serde's business; only `rename` matters here.
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                if let Ok(value) = meta.value()
                    && let Ok(lit) = value.parse::<LitStr>()
                {
                    name = lit.value();
                }
            } else if meta.input.peek(syn::Token![=]) {
                let _ = meta.value()?.parse::<Expr>();
            } else if meta.input.peek(syn::token::Paren) {
                let _ = meta.input.parse::<proc_macro2::Group>();
            }
            Ok(())
        });
    }
    name
}

pub(crate) fn expand(item: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(item) {
        Ok(input) => input,
        Err(e) => return e.to_compile_error(),
    };
    match generate(&input) {
        Ok(tokens) => tokens,
        // A derive adds items and never removes its input, so the error is emitted with a
        // placeholder impl: code using `.validate()` then reports nothing more than the error
        // itself (no follow-on "`Validate` is not implemented"). It never runs: the crate does
        // not compile.
        Err(e) => {
            let error = e.to_compile_error();
            let ident = &input.ident;
            let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
            quote! {
                #error
                impl #impl_generics ::framework::Validate for #ident #ty_generics #where_clause {
                    fn validate(&self) -> ::std::result::Result<(), ::framework::HttpError> {
                        ::std::result::Result::Ok(())
                    }
                }
            }
        }
    }
}

fn generate(input: &DeriveInput) -> syn::Result<TokenStream> {
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new(
            input.ident.span(),
            "`Validate` can only be derived for structs with named fields",
        ));
    };
    let Fields::Named(fields) = &data.fields else {
        return Err(syn::Error::new(
            data.fields.span(),
            "`Validate` can only be derived for structs with named fields",
        ));
    };
    let mut checks = Vec::new();
    let mut describes = Vec::new();
    let mut error: Option<syn::Error> = None;
    for field in &fields.named {
        let Some(ident) = &field.ident else { continue };
        let name = json_name(field, ident);
        let mut field_rules = Vec::new();
        for attr in field.attrs.iter().filter(|a| a.path().is_ident("validate")) {
            match parse_rules(attr) {
                Ok(rules) => field_rules.extend(rules),
                Err(e) => match &mut error {
                    Some(all) => all.combine(e),
                    None => error = Some(e),
                },
            }
        }
        describes.extend(field_rules.iter().map(|(rule, _)| rule.describe(&name)));
        let calls = field_rules.iter().map(|(rule, span)| {
            let call = rule.call(*span);
            let code = rule.code();
            quote! {
                if let ::std::result::Result::Err(reason) = #call {
                    return ::std::result::Result::Err(
                        ::framework::__private::failure(#name, #code, reason),
                    );
                }
            }
        });
        let calls: Vec<TokenStream> = calls.collect();
        if calls.is_empty() {
            continue;
        }
        checks.push(if is_named(&field.ty, "Option") {
            quote! { if let ::std::option::Option::Some(value) = &self.#ident { #(#calls)* } }
        } else {
            quote! { { let value = &self.#ident; #(#calls)* } }
        });
    }
    if let Some(e) = error {
        return Err(e);
    }
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    Ok(quote! {
        impl #impl_generics ::framework::Validate for #ident #ty_generics #where_clause {
            fn validate(&self) -> ::std::result::Result<(), ::framework::HttpError> {
                #(#checks)*
                ::std::result::Result::Ok(())
            }
            fn describe_rules(schema: &mut ::framework::__private::JsonValue) {
                let _ = &schema;
                #(#describes)*
            }
        }
    })
}
