//! [`Session`]: the request's handle on its session (its data, its id, regenerate and
//! destroy), and what the middleware saves of it.

use std::time::Duration;

use compact_str::CompactString;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{SessionData, SessionValue, internal_error, new_id};
use crate::error::{HttpError, Result};

/// One client's session data, reached through [`Context::session`](super::SessionExt::session).
#[derive(Debug, Default)]
pub struct Session {
    /// Inline (22 characters; up to 24 stay inline on 64-bit targets): making, copying and
    /// dropping an id allocates nothing.
    pub(super) id: Option<CompactString>,
    pub(super) data: SessionData,
    pub(super) modified: bool,
    pub(super) regenerate: bool,
    pub(super) save_on_error: bool,
    pub(super) ttl: Option<Duration>,
}

impl Session {
    /// The id; `None` for a new session that has not been saved yet.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }
    /// A value, deserialised; `None` when missing or not a `T`.
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        match self.data.get(key)? {
            SessionValue::Text(text) => T::deserialize(super::data::TextDeserializer(text)).ok(),
            SessionValue::Json(value) => T::deserialize(value).ok(),
        }
    }
    /// A string value.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.data.get_str(key)
    }
    /// Stores a value (as JSON; a string as text, see [`SessionValue`]).
    pub fn set(&mut self, key: impl AsRef<str>, value: impl Serialize) -> Result<(), HttpError> {
        let value = serde_json::to_value(value).map_err(internal_error)?;
        self.data.insert(key.as_ref(), value);
        self.modified = true;
        Ok(())
    }
    /// Stores a string. The same as [`Session::set`] with a string, without the detour
    /// through a JSON string: text of up to 24 bytes is kept inline, with no allocation.
    pub fn set_str(&mut self, key: impl AsRef<str>, value: &str) {
        self.data.insert(key.as_ref(), value);
        self.modified = true;
    }
    /// Removes a value, returning it.
    pub fn remove(&mut self, key: &str) -> Option<SessionValue> {
        let old = self.data.remove(key);
        self.modified |= old.is_some();
        old
    }
    /// Gives the session a new id when it is saved, and deletes the record under the old one.
    pub fn regenerate(&mut self) {
        self.regenerate = true;
        self.modified = true;
    }
    /// True when the session will be saved.
    pub fn is_modified(&self) -> bool {
        self.modified
    }
    /// Keeps this session for `ttl` from this save on (store record and cookie alike), or for
    /// the configured TTL with `None`: e.g. a short life for a session that only holds a login
    /// token, so anonymous clients cannot park long-lived records.
    pub fn set_ttl(&mut self, ttl: Option<Duration>) {
        self.ttl = ttl;
        self.modified = true;
    }
    /// Saves the changes even when the request ends with an error (normally an error discards
    /// them): for a change that must stick whatever happens next, such as a login attempt
    /// consuming its one-time token.
    pub fn save_on_error(&mut self) {
        self.save_on_error = true;
    }
}

/// The id a session is saved under, and the old id to delete first (a new session, or one
/// being regenerated, gets a new id).
pub(super) fn save_id(session: &Session) -> Result<(CompactString, Option<&str>), HttpError> {
    match (&session.id, session.regenerate) {
        (Some(id), false) => Ok((id.clone(), None)),
        (old, _) => {
            if old.is_none() {
                crate::telemetry::counters().session_created();
            }
            Ok((new_id()?, old.as_deref()))
        }
    }
}

impl Session {
    /// The session stored under `id`: empty when there is no record, or when the record no
    /// longer parses (a format change, corruption), which starts a fresh session rather than
    /// locking the client out.
    pub(super) fn from_record(id: &str, record: Option<bytes::Bytes>) -> Self {
        let Some(bytes) = record else {
            return Session::default();
        };
        Self::from_data(id, Some(serde_json::from_slice(&bytes).unwrap_or_default()))
    }

    /// The session stored under `id` with these values (`None`: no record, a new session).
    pub(super) fn from_data(id: &str, data: Option<SessionData>) -> Self {
        let Some(data) = data else {
            return Session::default();
        };
        Session {
            id: Some(CompactString::new(id)),
            data,
            modified: false,
            regenerate: false,
            save_on_error: false,
            ttl: None,
        }
    }
}
