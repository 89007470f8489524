//! Where the key that seals stored login secrets comes from, in this order:
//!
//! 1. `USER_STORE_KEY` (the key itself);
//! 2. `USER_STORE_KEY_FILE` (a file holding it: a mounted secret);
//! 3. with the embedded SQLite default, a key file beside the database, `<database>.key`,
//!    created on first start with mode 0600 (owner read/write only). It keeps a copy of the
//!    database file alone (a dump of the table, a copied `.db` file) useless for logging in; a
//!    backup of the whole directory carries the key along, so keep them apart if that matters.
//!    An in-memory SQLite database gets a random key that lives as long as the process;
//! 4. PostgreSQL without a key: the start-up is refused. Several instances share one database,
//!    so they need one key that the operator provides; a key made up by one instance would lock
//!    the others out.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::secret::{Keyring, generate_key, parse_key};
use crate::Config;

/// The SQLite database file named by `url`, or `None` for an in-memory database.
fn sqlite_file(url: &str) -> Option<PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let in_memory =
        path.is_empty() || path == ":memory:" || query.split('&').any(|kv| kv == "mode=memory");
    (!in_memory).then(|| PathBuf::from(path))
}

/// True when `url` names SQLite (file or memory).
fn is_sqlite(url: &str) -> bool {
    url.starts_with("sqlite:")
}

fn read_key_file(path: &Path) -> Result<[u8; 32], String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("key file {} cannot be read: {e}", path.display()))?;
    parse_key(&text).map_err(|e| format!("key file {}: {e}", path.display()))
}

/// Reads the key file beside an SQLite database, creating it (mode 0600, never overwriting
/// one that appeared meanwhile) when missing.
fn key_beside(database: &Path) -> Result<([u8; 32], PathBuf, bool), String> {
    let mut name = database.as_os_str().to_owned();
    name.push(".key");
    let path = PathBuf::from(name);
    if path.exists() {
        return Ok((read_key_file(&path)?, path, false));
    }
    let key = generate_key().map_err(|e| e.to_string())?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(&path) {
        Ok(mut file) => {
            file.write_all(format!("{key}\n").as_bytes())
                .and_then(|()| file.sync_all())
                .map_err(|e| format!("key file {} cannot be written: {e}", path.display()))?;
            Ok((parse_key(&key)?, path, true))
        }
        // Another process created it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Ok((read_key_file(&path)?, path, false))
        }
        Err(e) => Err(format!(
            "key file {} cannot be created: {e}",
            path.display()
        )),
    }
}

/// The keyring for `config`'s SQL store and a description of where its key came from (no key
/// material).
pub fn keyring(config: &Config) -> Result<(Keyring, String), String> {
    let (key, source) = if let Some(key) = &config.store_key {
        (key.0, "USER_STORE_KEY".to_owned())
    } else if let Some(path) = &config.store_key_file {
        (read_key_file(path)?, format!("key file {}", path.display()))
    } else if let Some(database) = sqlite_file(&config.database_url) {
        let (key, path, created) = key_beside(&database)?;
        if created {
            tracing::info!(file = %path.display(), "created the key file that seals stored login secrets");
        }
        (key, format!("key file {}", path.display()))
    } else if is_sqlite(&config.database_url) {
        let key = generate_key().map_err(|e| e.to_string())?;
        (parse_key(&key)?, "a key for this process only".to_owned())
    } else {
        return Err(
            "the user store seals login secrets with a key: set USER_STORE_KEY (64 hex digits, \
             e.g. from `openssl rand -hex 32`) or USER_STORE_KEY_FILE, the same for every \
             instance"
                .to_owned(),
        );
    };
    let keyring = Keyring::new(&key).with_previous(config.store_previous_keys.iter().map(|k| &k.0));
    Ok((keyring, source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_urls() {
        assert_eq!(
            sqlite_file("sqlite://users.db?mode=rwc"),
            Some("users.db".into())
        );
        assert_eq!(
            sqlite_file("sqlite:///var/lib/u.db"),
            Some("/var/lib/u.db".into())
        );
        assert_eq!(sqlite_file("sqlite:data/u.db"), Some("data/u.db".into()));
        assert_eq!(sqlite_file("sqlite::memory:"), None);
        assert_eq!(sqlite_file("sqlite://x.db?mode=memory&cache=shared"), None);
        assert_eq!(sqlite_file("postgres://db/x"), None);
        assert!(is_sqlite("sqlite::memory:"));
    }

    fn temp(name: &str) -> PathBuf {
        let mut bits = [0u8; 8];
        getrandom::fill(&mut bits).unwrap();
        std::env::temp_dir().join(format!("{name}-{}", hex::encode(bits)))
    }

    #[test]
    fn the_key_file_beside_sqlite_is_created_once_with_mode_0600_and_reused() {
        let db = temp("keys-test.db");
        let config = Config {
            database_url: format!("sqlite://{}?mode=rwc", db.display()),
            ..Config::default()
        };
        let (first, source) = keyring(&config).unwrap();
        let file = PathBuf::from(format!("{}.key", db.display()));
        assert_eq!(source, format!("key file {}", file.display()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let (again, _) = keyring(&config).unwrap();
        assert_eq!(
            first.current_id(),
            again.current_id(),
            "the same key on restart"
        );
        std::fs::write(&file, "garbage").unwrap();
        assert!(keyring(&config).unwrap_err().contains("key file"));
        let _ = std::fs::remove_file(&file);
    }

    #[test]
    fn configured_keys_win_and_postgres_needs_one() {
        let key = crate::store::secret::StoreKey([5; 32]);
        let config = Config {
            database_url: "postgres://db/users".into(),
            ..Config::default()
        };
        let err = keyring(&config).unwrap_err();
        assert!(err.contains("USER_STORE_KEY"), "{err}");
        let with_key = Config {
            store_key: Some(key),
            ..config.clone()
        };
        let (ring, source) = keyring(&with_key).unwrap();
        assert_eq!(source, "USER_STORE_KEY");
        assert_eq!(ring.current_id(), Keyring::new(&[5; 32]).current_id());
        let file = temp("keys-test.key");
        std::fs::write(&file, hex::encode([6u8; 32]) + "\n").unwrap();
        let from_file = Config {
            store_key_file: Some(file.clone()),
            ..config.clone()
        };
        let (ring, _) = keyring(&from_file).unwrap();
        assert_eq!(ring.current_id(), Keyring::new(&[6; 32]).current_id());
        let _ = std::fs::remove_file(&file);
        let missing = Config {
            store_key_file: Some(temp("no-such.key")),
            ..config
        };
        assert!(keyring(&missing).unwrap_err().contains("cannot be read"));
        let memory = Config {
            database_url: "sqlite::memory:".into(),
            ..Config::default()
        };
        assert_eq!(keyring(&memory).unwrap().1, "a key for this process only");
    }
}
