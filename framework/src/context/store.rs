//! What a request carries besides the HTTP message: per-request values by name, per-request
//! data by type, and the application's state.

use std::any::Any;
use std::borrow::Cow;

use super::Context;
use crate::state::State;

impl Context {
    /// Stores a per-request value under `key`, replacing the value stored under it before.
    pub fn set_value<T: Any + Send + Sync>(&mut self, key: impl Into<Cow<'static, str>>, value: T) {
        let key = key.into();
        let value: Box<dyn Any + Send + Sync> = Box::new(value);
        match self.values.iter_mut().find(|(k, _)| *k == key) {
            Some((_, slot)) => *slot = value,
            None => self.values.push((key, value)),
        }
    }

    fn any_value(&self, key: &str) -> Option<&(dyn Any + Send + Sync)> {
        self.values
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| &**v)
    }
    /// A per-request value stored under `key`, if it has type `T`.
    pub fn value<T: Any>(&self, key: &str) -> Option<&T> {
        self.any_value(key)?.downcast_ref()
    }
    /// A per-request string value (`String` or `&'static str`).
    pub fn value_str(&self, key: &str) -> Option<&str> {
        let v = self.any_value(key)?;
        v.downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| v.downcast_ref::<&'static str>().copied())
    }
    /// Stores `value` as this request's data of type `T`, returning the value stored before.
    ///
    /// Typed per-request data is how middleware hands things to handlers and to other
    /// middleware (the session, JWT claims, a body reader's decision), the way salvo's `Depot`
    /// or axum's request extensions do: a middleware module adds an extension trait on
    /// `Context` (such as [`SessionExt`](crate::middleware::session::SessionExt)) over these
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
