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
                format!("no state of type {} was registered", type_name::<T>()),
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
pub trait FromState: Sized + Send + Sync + 'static {
    /// Takes what the controller needs from `state`.
    fn from_state(state: &State) -> crate::Result<Self>;
}
