//! Application state: values of any type, one per type, shared by every request.
//!
//! Controllers take what they need from it when they are built ([`crate::FromState`]), so
//! nothing is global.

use std::any::{Any, TypeId, type_name};
use std::collections::HashMap;

use crate::error::HttpError;

/// A map from type to one shared value of that type.
#[derive(Default)]
pub struct State {
    values: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
}

impl State {
    /// An empty state.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores `value`, replacing an earlier value of the same type.
    pub fn insert<T: Any + Send + Sync>(&mut self, value: T) {
        self.values.insert(TypeId::of::<T>(), Box::new(value));
    }

    /// The value of type `T`, if one was stored.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.values.get(&TypeId::of::<T>())?.downcast_ref()
    }

    /// The value of type `T`, or an error naming the missing type.
    pub fn require<T: Any + Send + Sync>(&self) -> Result<&T, HttpError> {
        self.get().ok_or_else(|| {
            HttpError::with(
                http::StatusCode::INTERNAL_SERVER_ERROR,
                crate::error::DEFAULT_CATEGORY,
                format!(
                    "no state of type {} was registered",
                    readable_type_name::<T>()
                ),
            )
            .with_exception(true)
        })
    }
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("values", &self.values.len())
            .finish()
    }
}

/// Builds a controller from the application state when routes are mounted.
///
/// Usually derived: `#[derive(FromState)]` takes each field from the state by its type (a
/// clone of the registered value, so share big things as `Arc<..>`), and a unit struct needs
/// nothing. A missing type fails [`App::build`](crate::App::build) with the controller, the
/// field and the type:
///
/// ```rust,standalone_crate
/// use std::sync::Arc;
/// use framework::{App, Context, FromState, Result, controller};
///
/// struct Config {
///     greeting: String,
/// }
///
/// #[derive(FromState)]
/// struct Hello {
///     config: Arc<Config>,
/// }
///
/// #[controller(prefix = "/hello")]
/// impl Hello {
///     #[get("/")]
///     async fn hello(&self, _ctx: &mut Context) -> String {
///         self.config.greeting.clone()
///     }
/// }
///
/// let app = App::new().mount_controllers();
/// let err = app.build().err().expect("no Arc<Config> registered");
/// assert!(err.to_string().contains("controller Hello"), "{err}");
/// assert!(err.to_string().contains("field `config`"), "{err}");
///
/// let config = Arc::new(Config { greeting: "hi".into() });
/// let _service = App::new().with_state(config).mount_controllers().build().unwrap();
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not implement `FromState`, so it cannot be built as a controller",
    label = "a controller is built from the app state",
    note = "add `#[derive(FromState)]` to `{Self}` (each field is taken from the state by its \
            type; a unit struct needs nothing), or implement `FromState` by hand"
)]
pub trait FromState: Sized + Send + Sync + 'static {
    /// Takes what the controller needs from `state`.
    fn from_state(state: &State) -> crate::Result<Self>;
}

/// `T`'s name as a user writes it: `std::sync::Arc<dyn app::Store>`, `String`, not the
/// `alloc::` and `core::` paths [`type_name`] gives.
pub(crate) fn readable_type_name<T: ?Sized>() -> String {
    type_name::<T>()
        .replace("alloc::string::String", "String")
        .replace("alloc::vec::Vec", "Vec")
        .replace("alloc::boxed::Box", "Box")
        .replace("core::option::Option", "Option")
        .replace("alloc::", "std::")
        .replace("core::", "std::")
}

/// A clone of the state value of type `T`, for field `field` of a derived [`FromState`]; the
/// error names the field and the type.
#[doc(hidden)]
pub fn field<T: Any + Send + Sync + Clone>(state: &State, field: &str) -> crate::Result<T> {
    state.get::<T>().cloned().ok_or_else(|| {
        HttpError::with(
            http::StatusCode::INTERNAL_SERVER_ERROR,
            crate::error::DEFAULT_CATEGORY,
            format!(
                "field `{field}` needs state of type `{}`: register it with `App::with_state`",
                readable_type_name::<T>()
            ),
        )
        .with_exception(true)
        .into()
    })
}
