//! `Context` stays a few clear types: its own public methods are counted on the source, so a
//! change that grows it past the bound fails here, naming the methods. A feature's methods
//! belong in that feature's extension trait (`CookiesExt`, `SessionExt`, …), the connection's
//! facts in `ConnectionInfo`, the response's content in `Content`.

use std::path::Path;

/// The most public methods `Context` itself may have.
const MAX_PUBLIC_METHODS: usize = 34;

/// The public methods of every `impl Context` block under `src/context/`, and whether any
/// field of `struct Context` is public.
fn public_api() -> (Vec<String>, Vec<String>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/context");
    let mut methods = Vec::new();
    let mut public_fields = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let file = syn::parse_file(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for item in file.items {
            match item {
                syn::Item::Impl(block)
                    if block.trait_.is_none()
                        && matches!(&*block.self_ty, syn::Type::Path(p) if p.path.is_ident("Context")) =>
                {
                    for inner in block.items {
                        if let syn::ImplItem::Fn(f) = inner
                            && matches!(f.vis, syn::Visibility::Public(_))
                        {
                            methods.push(f.sig.ident.to_string());
                        }
                    }
                }
                syn::Item::Struct(s) if s.ident == "Context" => {
                    for field in s.fields {
                        if !matches!(field.vis, syn::Visibility::Inherited) {
                            public_fields
                                .push(field.ident.map(|i| i.to_string()).unwrap_or_default());
                        }
                    }
                }
                _ => {}
            }
        }
    }
    methods.sort();
    (methods, public_fields)
}

#[test]
fn the_context_has_few_public_methods_and_no_public_field() {
    let (methods, fields) = public_api();
    assert!(
        methods.len() > 20,
        "the walk found the methods: {methods:?}"
    );
    assert!(
        methods.len() <= MAX_PUBLIC_METHODS,
        "Context has {} public methods (at most {MAX_PUBLIC_METHODS}): {methods:?}",
        methods.len()
    );
    for gone in [
        "cookies",
        "real_ip",
        "remote_addr",
        "set_committed",
        "header",
        "set_header",
    ] {
        assert!(
            !methods.iter().any(|m| m == gone),
            "{gone} is back on Context"
        );
    }
    assert!(fields.is_empty(), "public fields of Context: {fields:?}");
}
