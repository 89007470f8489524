//! Procedural macros for `framework`: `#[controller]`, the route attributes (`#[get]`,
//! `#[post]`, ...), `#[derive(Validate)]` and `#[derive(FromState)]`.
//!
//! The macros only generate calls into `framework`; all behaviour lives there. Each parses its
//! arguments into a typed struct, validates them, then generates. On any error the input item
//! is emitted again beside `compile_error!`, so the rest of the code still type-checks and
//! editors keep working.

use proc_macro::TokenStream;

mod controller;
mod from_state;
mod types;
mod validate;
mod validator;

/// Registers an `impl` block's annotated methods as routes under a prefix.
///
/// `#[controller(prefix = "/users", middleware(session))]`: `prefix` defaults to `""`;
/// `middleware` names middleware registered on the app with `register_middleware`, run for every
/// route of the controller. Methods carry `#[get("/path")]`, `#[post(...)]`, `#[put]`,
/// `#[patch]`, `#[delete]`, `#[head]` or `#[options]`, optionally with their own
/// `middleware(...)`. A handler is `async fn name(&self, ctx: &mut Context) -> R`, where `R` is
/// `Result<T>` (an error goes to the error handler), a plain `Serialize` value (the body), or
/// `()` (the handler answered through `ctx`, e.g. `ctx.set_status(204)`). The choice is made
/// on the written return type: one whose name ends in `Result` (`Result<T>`,
/// `framework::Result<T>`, an alias such as `ApiResult<T>`) must be `framework::Result<T>`;
/// anything else is a value.
#[proc_macro_attribute]
pub fn controller(attr: TokenStream, item: TokenStream) -> TokenStream {
    controller::expand(attr.into(), item.into()).into()
}

/// Declares a trait's methods as routes under a prefix: an API definition that a server
/// implements with `#[controller] impl Trait for Type` and a client is generated from.
///
/// `#[api(prefix = "/users")] pub trait UserApi { #[get("/v1/me")] async fn me(&self, ctx: &mut
/// Context) -> Result<Me>; .. }`: the methods take the route attributes, the argument
/// attributes and the signatures a `#[controller]` impl block's methods take, and give the
/// same routes, validation and OpenAPI description. Each route's `async fn` becomes a method
/// returning a `Send` future; the trait gets `Send + Sync + Sized + 'static` as supertraits.
/// The implementor's `#[controller]` takes no `prefix` (the trait's is used) and may name the
/// controller middleware (`middleware(session)`) unless the trait does.
#[proc_macro_attribute]
pub fn api(attr: TokenStream, item: TokenStream) -> TokenStream {
    controller::expand_api(attr.into(), item.into()).into()
}

macro_rules! route_attribute {
    ($($name:ident),*) => {$(
        #[doc = concat!("Marks a controller method as the `", stringify!($name),
            "` handler of a path: `#[", stringify!($name), "(\"/v1/me\")]`. Only valid inside \
            a `#[controller]` impl block or an `#[api]` trait, which consumes it.")]
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

/// Makes a validator function declare the JSON Schema of the values it accepts, so a field
/// it checks (`#[validate(xUserAccount)]`) carries the rule into the OpenAPI document.
///
/// `#[validator(min_length = 2, max_length = 20, pattern = "^[A-Za-z0-9_]*$")]` on
/// `fn xUserAccount(value: &str) -> Result<(), E>`; the keywords are `min_length`,
/// `max_length`, `pattern`, `minimum`, `maximum` and `format`, each taking an expression that
/// becomes JSON. The function becomes a value of the same name, still called as before
/// (`xUserAccount("ab")`), that implements `framework::validate::ValidatorSchema`. It must not
/// be generic or async, and its error type must be named (not `impl Display`). The declared
/// schema is a promise about the function: keep the two in step (a contract tester such as
/// schemathesis catches a mismatch).
#[proc_macro_attribute]
pub fn validator(attr: TokenStream, item: TokenStream) -> TokenStream {
    validator::expand(attr.into(), item.into()).into()
}

/// Derives `framework::FromState`: each field is a clone of the app state's value of the
/// field's type (`Arc<dyn UserStore>`, `Arc<Config>`, ...); a unit struct needs nothing. A
/// missing type fails `App::build()` naming the controller, the field and the type.
#[proc_macro_derive(FromState)]
pub fn derive_from_state(item: TokenStream) -> TokenStream {
    from_state::expand(item.into()).into()
}
