//! What a written type is, told by its path's last name: a macro sees types as written, not
//! resolved, so `framework::extract::Json<T>` and an imported `Json<T>` are both `Json`.

use syn::{PathSegment, Type};

/// The last path segment of a type (`Json<T>` of `framework::extract::Json<T>`); none for a
/// qualified path (`<T as Trait>::Output`) or a type that is not a path.
pub(crate) fn last_segment(ty: &Type) -> Option<&PathSegment> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        _ => None,
    }
}

/// Whether the last path segment of a type is named `name` (`Option` for
/// `std::option::Option<T>`).
pub(crate) fn is_named(ty: &Type, name: &str) -> bool {
    last_segment(ty).is_some_and(|segment| segment.ident == name)
}

/// `T` of `<name><T, ...>` (by the last path segment's name).
pub(crate) fn wrapped<'t>(ty: &'t Type, name: &str) -> Option<&'t Type> {
    let segment = last_segment(ty)?;
    if segment.ident != name {
        return None;
    }
    first_generic(segment)
}

/// `T` of `Option<T>`.
pub(crate) fn option_inner(ty: &Type) -> Option<&Type> {
    wrapped(ty, "Option")
}

/// The first generic type argument of a path segment: `T` of `Result<T, E>`.
pub(crate) fn first_generic(segment: &PathSegment) -> Option<&Type> {
    match &segment.arguments {
        syn::PathArguments::AngleBracketed(args) => args.args.iter().find_map(|a| match a {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        }),
        _ => None,
    }
}

/// Whether a return type is a `Result` (by name: `Result`, `framework::Result`, an alias
/// ending in `Result`), rather than a plain value or `()`.
pub(crate) fn returns_result(ty: &Type) -> bool {
    last_segment(ty).is_some_and(|segment| segment.ident.to_string().ends_with("Result"))
}

/// The value a return type carries: `T` of a `Result<T>` (none of a bare `Result`), else the
/// type itself.
pub(crate) fn result_value(ty: &Type) -> Option<&Type> {
    if returns_result(ty) {
        last_segment(ty).and_then(first_generic)
    } else {
        Some(ty)
    }
}
