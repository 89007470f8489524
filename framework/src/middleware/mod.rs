//! The batteries: one middleware per module.
//!
//! Reference order for an app (outermost first): recover, logger, stats, compress, fresh, etag,
//! error handler, responder, body parser.

pub mod body_parser;
pub mod compress;
pub mod error_handler;
#[cfg(feature = "proxy")]
pub mod proxy;
pub mod recover;
pub mod responder;
pub mod session;
#[cfg(feature = "static-serve")]
pub mod static_serve;
