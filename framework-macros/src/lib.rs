//! Procedural macros for `framework`: `#[controller]`, the route attributes (`#[get]`,
//! `#[post]`, ...) and `#[derive(Validate)]`.
//!
//! The macros only generate calls into `framework`; all behaviour lives there. Each parses its
//! arguments into a typed struct, validates them, then generates. On any error the input item
//! is emitted again beside `compile_error!`, so the rest of the code still type-checks and
//! editors keep working.

use proc_macro::TokenStream;

mod controller;
mod route_path;
mod validate;

/// Registers an `impl` block's annotated methods as routes under a prefix.
///
/// `#[controller(prefix = "/users", middleware(session))]`: `prefix` defaults to `""`;
/// `middleware` names middleware registered on the app with `register_middleware`, run for every
/// route of the controller. Methods carry `#[get("/path")]`, `#[post(...)]`, `#[put]`,
/// `#[patch]`, `#[delete]`, `#[head]` or `#[options]`, optionally with their own
/// `middleware(...)`. A handler is `async fn name(&self, ctx: &mut Context) -> Result<T>`.
#[proc_macro_attribute]
pub fn controller(attr: TokenStream, item: TokenStream) -> TokenStream {
    controller::expand(attr.into(), item.into()).into()
}

macro_rules! route_attribute {
    ($($name:ident),*) => {$(
        #[doc = concat!("Marks a controller method as the `", stringify!($name),
            "` handler of a path: `#[", stringify!($name), "(\"/v1/me\")]`. Only valid inside \
            a `#[controller]` impl block, which consumes it.")]
        #[proc_macro_attribute]
        pub fn $name(_attr: TokenStream, item: TokenStream) -> TokenStream {
            controller::outside_controller(stringify!($name), item.into()).into()
        }
    )*};
}

route_attribute!(get, post, put, patch, delete, head, options);

/// Derives `framework::Validate` from `#[validate(...)]` field attributes.
///
/// Each name in the attribute is a validator: a built-in rule (`length(min = 2, max = 20)`,
/// `range(min = 1, max = 9)`, `non_empty`, `hex`, `ascii`, `charset("abc")`,
/// `one_of("a", "b")`) or a function in scope taking a reference to the field and returning
/// `Result<(), impl Display>`, such as `xUserAccount`.
#[proc_macro_derive(Validate, attributes(validate))]
pub fn derive_validate(item: TokenStream) -> TokenStream {
    validate::expand(item.into()).into()
}
