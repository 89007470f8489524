//! The batteries: one middleware per module.
//!
//! Reference order for an app (outermost first): recover, logger, stats, compress, fresh, etag,
//! error handler, responder, body parser.

pub mod body_parser;
pub mod compress;
pub mod error_handler;
pub mod recover;
pub mod responder;
pub mod session;
