//! Request parameters and their validators: declared with the routes in the `user-api` crate,
//! re-exported here.

pub use user_api::{AccountName, UserParams, xUserAccount, xUserPassword};
