//! URL path rewrites, compiled once: `<pattern>:<replacement>`, where `*` in the pattern
//! captures any run of characters and `$1`, `$2`, … in the replacement stand for the captures.

use regex::Regex;

/// One compiled rule.
#[derive(Debug, Clone)]
pub(crate) struct Rewrite {
    pattern: Regex,
    replacement: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Capture(usize),
}

/// Compiles `rule`, e.g. `/api/*:/$1`. The pattern must start with `/` and matches the whole
/// path; a replacement naming a capture the pattern does not have is an error.
pub(crate) fn compile(rule: &str) -> Result<Rewrite, String> {
    let (pattern, replacement) = rule
        .split_once(':')
        .ok_or_else(|| format!("rewrite `{rule}`: expected `<pattern>:<replacement>`"))?;
    if !pattern.starts_with('/') {
        return Err(format!("rewrite `{rule}`: the pattern must start with `/`"));
    }
    let stars = pattern.matches('*').count();
    let mut source = String::from("^");
    for (i, literal) in pattern.split('*').enumerate() {
        if i > 0 {
            source.push_str("(.*)");
        }
        source.push_str(&regex::escape(literal));
    }
    source.push('$');
    let pattern = Regex::new(&source).map_err(|e| format!("rewrite `{rule}`: {e}"))?;
    let replacement =
        parse_replacement(replacement, stars).map_err(|e| format!("rewrite `{rule}`: {e}"))?;
    Ok(Rewrite {
        pattern,
        replacement,
    })
}

fn parse_replacement(text: &str, captures: usize) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let digits: String = if c == '$' {
            let start = i + 1;
            let len = text[start..].bytes().take_while(u8::is_ascii_digit).count();
            text[start..start + len].to_owned()
        } else {
            String::new()
        };
        if digits.is_empty() {
            literal.push(c);
            continue;
        }
        for _ in 0..digits.len() {
            chars.next();
        }
        let n: usize = digits
            .parse()
            .map_err(|_| format!("`${digits}` is not a capture"))?;
        if n == 0 || n > captures {
            return Err(format!(
                "`${n}` names a capture the pattern does not have (it has {captures})"
            ));
        }
        if !literal.is_empty() {
            parts.push(Part::Text(std::mem::take(&mut literal)));
        }
        parts.push(Part::Capture(n));
    }
    if !literal.is_empty() {
        parts.push(Part::Text(literal));
    }
    Ok(parts)
}

impl Rewrite {
    /// The rewritten path, or `None` when the rule does not match.
    pub(crate) fn apply(&self, path: &str) -> Option<String> {
        let captures = self.pattern.captures(path)?;
        let mut out = String::with_capacity(path.len());
        for part in &self.replacement {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Capture(n) => out.push_str(captures.get(*n).map_or("", |m| m.as_str())),
            }
        }
        Some(out)
    }
}

/// Applies `rules` in order, each to the result of the ones before (as the Go reference does).
pub(crate) fn rewrite_path<'a>(rules: &[Rewrite], path: &'a str) -> std::borrow::Cow<'a, str> {
    let mut current = std::borrow::Cow::Borrowed(path);
    for rule in rules {
        if let Some(next) = rule.apply(&current) {
            current = std::borrow::Cow::Owned(next);
        }
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(list: &[&str]) -> Vec<Rewrite> {
        list.iter().map(|r| compile(r).unwrap()).collect()
    }

    #[test]
    fn seed_examples() {
        let r = rules(&["/api/*:/$1"]);
        assert_eq!(rewrite_path(&r, "/api/users/me"), "/users/me");
        assert_eq!(rewrite_path(&r, "/api/"), "/");
        assert_eq!(rewrite_path(&r, "/other/api/x"), "/other/api/x");
        let r = rules(&["/users/*/books/*:/books/$2?owner=$1"]);
        assert_eq!(rewrite_path(&r, "/users/7/books/42"), "/books/42?owner=7");
        let r = rules(&["/old/*:/new/$1", "/new/*:/v2/$1"]);
        assert_eq!(rewrite_path(&r, "/old/a"), "/v2/a");
        let r = rules(&["/static/*:/assets/$1.txt"]);
        assert_eq!(rewrite_path(&r, "/static/a"), "/assets/a.txt");
        // Regex metacharacters in the pattern are literal.
        let r = rules(&["/a.b/*:/$1"]);
        assert_eq!(rewrite_path(&r, "/axb/c"), "/axb/c");
        assert_eq!(rewrite_path(&r, "/a.b/c"), "/c");
        // `$` not followed by digits is literal text.
        let r = rules(&["/p/*:/q$/$1"]);
        assert_eq!(rewrite_path(&r, "/p/z"), "/q$/z");
    }

    #[test]
    fn malformed_rules() {
        for bad in ["/api/*", "api/*:/$1", "/api/*:/$2", "/api:/$1", "/a/*:/$0"] {
            assert!(compile(bad).is_err(), "{bad}");
        }
    }
}
