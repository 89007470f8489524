//! Compile-time check of route paths, so a typo fails the build instead of the start-up.
//! The rules are the router's (`framework::router`): a leading `/`, params `:name` or
//! `{name}` made of letters, digits and `_`, and a wildcard `*` or `*name` only at the end.

pub(crate) fn check(path: &str, is_prefix: bool) -> Result<(), String> {
    if path.is_empty() && is_prefix {
        return Ok(());
    }
    let Some(rest) = path.strip_prefix('/') else {
        return Err(format!("route path `{path}` must start with `/`"));
    };
    let parts: Vec<&str> = rest.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        let name = part
            .strip_prefix(':')
            .or_else(|| part.strip_prefix('{').and_then(|p| p.strip_suffix('}')));
        if let Some(name) = name {
            if name.is_empty() {
                return Err(format!("route path `{path}`: param `{part}` has no name"));
            }
            if !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
                return Err(format!(
                    "route path `{path}`: param names are letters, digits or `_`, got `{part}`"
                ));
            }
        } else if part.starts_with('*') {
            if is_prefix || i + 1 != parts.len() {
                return Err(format!(
                    "route path `{path}`: the wildcard `*` must be the last segment"
                ));
            }
        } else if part.contains(['{', '}', '*']) {
            return Err(format!("route path `{path}`: bad segment `{part}`"));
        }
    }
    Ok(())
}

/// The most params a route's full path may have: the router's `MAX_PARAMS`
/// (`framework::router`), which this crate cannot name.
const MAX_PARAMS: usize = 8;

/// Refuses a route's full path (controller prefix and route path) with more params than the
/// router takes, as `build()` would, with the router's words.
pub(crate) fn check_params(full_path: &str) -> Result<(), String> {
    let count = full_path
        .split('/')
        .filter(|part| part.starts_with([':', '*']) || part.starts_with('{') && part.ends_with('}'))
        .count();
    if count > MAX_PARAMS {
        return Err(format!(
            "route path `{full_path}` has {count} params, at most {MAX_PARAMS} are allowed"
        ));
    }
    Ok(())
}

/// A route's full path, joined as the app joins a controller's prefix and a route's path
/// (`framework::app`'s `join_path`): `"/"` under a prefix is the prefix itself.
pub(crate) fn join(prefix: &str, path: &str) -> String {
    let prefix = prefix.trim_end_matches('/');
    if path.is_empty() || path == "/" && !prefix.is_empty() {
        return if prefix.is_empty() {
            "/".to_owned()
        } else {
            prefix.to_owned()
        };
    }
    format!("{prefix}{path}")
}
