//! How configuration structs grow without breaking their users: every public config struct is
//! `#[non_exhaustive]` (a struct literal outside the framework does not compile, so a new
//! field breaks nobody) and is made from its `Default` (or its constructor) and a setter per
//! field, chained:
//!
//! ```
//! use framework::middleware::logger::LoggerConfig;
//!
//! let config = LoggerConfig::default().format("{method} {uri} {status}");
//! assert_eq!(config.format, "{method} {uri} {status}");
//! ```
//!
//! The fields stay public to read (and to set on a `mut` binding).

/// A setter per field, named after it, taking the field's type (`name => String` takes
/// `impl Into<String>`): `Config::default().a(1).b("x")`.
macro_rules! setters {
    ($ty:ident { $($field:ident $(: $fty:ty)? $(=> $into:ty)?),* $(,)? }) => {
        impl $ty {
            $(
                crate::config::setters!(@one $field $(: $fty)? $(=> $into)?);
            )*
        }
    };
    // `const` setters, for a type with a `const` default that a `const` may be built from.
    (const $ty:ident { $($field:ident: $fty:ty),* $(,)? }) => {
        impl $ty {
            $(
                #[doc = concat!("Sets the field `", stringify!($field), "`.")]
                #[must_use]
                pub const fn $field(mut self, $field: $fty) -> Self {
                    self.$field = $field;
                    self
                }
            )*
        }
    };
    (@one $field:ident : $fty:ty) => {
        #[doc = concat!("Sets the field `", stringify!($field), "`.")]
        #[must_use]
        pub fn $field(mut self, $field: $fty) -> Self {
            self.$field = $field;
            self
        }
    };
    (@one $field:ident => $into:ty) => {
        #[doc = concat!("Sets the field `", stringify!($field), "`.")]
        #[must_use]
        pub fn $field(mut self, $field: impl Into<$into>) -> Self {
            self.$field = $field.into();
            self
        }
    };
}

pub(crate) use setters;
