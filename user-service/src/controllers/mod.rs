//! The service's controllers, mounted through `#[controller]` registration.

pub mod avatar;
pub mod user;
