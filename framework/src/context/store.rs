//! What a request carries besides the HTTP message: its data by type (the one per-request
//! store), and the application's state.

use std::any::Any;

use super::Context;
use crate::state::State;

impl Context {
    /// Stores `value` as this request's data of type `T`, returning the value stored before.
    ///
    /// Typed per-request data is how middleware hands things to handlers and to other
    /// middleware (the session, JWT claims, a body reader's decision), the way salvo's `Depot`
    /// or axum's request extensions do: a middleware module adds an extension trait on
    /// `Context` (such as [`SessionExt`](crate::middleware::session::SessionExt) or
    /// [`CookiesExt`](crate::cookies::CookiesExt)) over these
    /// calls, so its data has a name of its own. The store is a short list searched by type,
    /// whose boxes a thread recycles from one request to the next: a value usually moves into
    /// the box its type had in the last request, and a request that stores nothing costs
    /// nothing.
    pub fn insert_data<T: Any + Send + Sync>(&mut self, value: T) -> Option<T> {
        self.data.insert(value)
    }
    /// This request's data of type `T`, if a middleware stored one.
    pub fn data<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.data.get()
    }
    /// This request's data of type `T`, mutable.
    pub fn data_mut<T: Any + Send + Sync>(&mut self) -> Option<&mut T> {
        self.data.get_mut()
    }
    /// Takes this request's data of type `T` out.
    pub fn remove_data<T: Any + Send + Sync>(&mut self) -> Option<T> {
        self.data.remove()
    }
    /// Application state registered with [`crate::App::with_state`].
    pub fn state(&self) -> &State {
        &self.shared.state
    }
}
