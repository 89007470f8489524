//! URL path rewrites, compiled once: `<pattern>:<replacement>`, where `*` in the pattern
//! captures any run of characters and `$1`, `$2`, … in the replacement stand for the captures.
//!
//! A pattern is literal text between its stars, matched against the whole path as the regex
//! `^lit(.*)lit(.*)…lit$` would be, each star as long as the rest still matches, but without
//! a regex engine: each literal is placed at its rightmost possible position, from the last
//! one (which ends the path) back to the first (which starts it). That is one `rfind` per
//! literal, linear in the path for any number of stars.

/// One compiled rule.
#[derive(Debug, Clone)]
pub(crate) struct Rewrite {
    /// The pattern's text around its stars: one more than there are stars.
    literals: Vec<String>,
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
    let literals: Vec<String> = pattern.split('*').map(str::to_owned).collect();
    let replacement = parse_replacement(replacement, literals.len() - 1)
        .map_err(|e| format!("rewrite `{rule}`: {e}"))?;
    Ok(Rewrite {
        literals,
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
        let captures = self.captures(path)?;
        let mut out = String::with_capacity(path.len());
        for part in &self.replacement {
            match part {
                Part::Text(text) => out.push_str(text),
                // `parse_replacement` allows only `1..=stars`.
                Part::Capture(n) => out.push_str(captures.get(n - 1).copied().unwrap_or("")),
            }
        }
        Some(out)
    }

    /// What each star matched, or `None` when the path does not match: the greedy captures
    /// (the first star as long as possible, then the next, …), which place every literal
    /// after the first at its rightmost possible position.
    fn captures<'p>(&self, path: &'p str) -> Option<Vec<&'p str>> {
        let (first, rest) = self.literals.split_first()?;
        let text = path.strip_prefix(first.as_str())?;
        let Some((last, middle)) = rest.split_last() else {
            // No star: the pattern is the whole path.
            return text.is_empty().then(Vec::new);
        };
        // Where each literal after the first starts, placed from the end leftwards.
        let mut starts = vec![0; rest.len()];
        let mut end = text.strip_suffix(last.as_str())?.len();
        starts[rest.len() - 1] = end;
        for (i, literal) in middle.iter().enumerate().rev() {
            end = text[..end].rfind(literal.as_str())?;
            starts[i] = end;
        }
        let mut from = 0;
        let mut captures = Vec::with_capacity(rest.len());
        for (literal, &start) in rest.iter().zip(&starts) {
            captures.push(&text[from..start]);
            from = start + literal.len();
        }
        Some(captures)
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

    /// The same captures as the regex `^lit(.*)…lit$` (greedy stars) on paths where a
    /// literal occurs several times, overlaps itself, or is empty (adjacent stars).
    #[test]
    fn stars_are_greedy_like_the_regex() {
        let r = rules(&["/a*b*c:[$1|$2]"]);
        assert_eq!(rewrite_path(&r, "/axbybzc"), "[xby|z]");
        assert_eq!(rewrite_path(&r, "/abc"), "[|]");
        assert_eq!(rewrite_path(&r, "/abbc"), "[b|]");
        assert_eq!(rewrite_path(&r, "/ac"), "/ac", "no b: no match");
        let r = rules(&["/**:[$1|$2]"]);
        assert_eq!(rewrite_path(&r, "/xyz"), "[xyz|]");
        let r = rules(&["/*aa*:[$1|$2]"]);
        assert_eq!(rewrite_path(&r, "/aaa"), "[a|]");
        assert_eq!(rewrite_path(&r, "/aaaab"), "[aa|b]");
        let r = rules(&["/x/*/y:[$1]"]);
        assert_eq!(
            rewrite_path(&r, "/x/y"),
            "/x/y",
            "the literals may not overlap"
        );
        assert_eq!(rewrite_path(&r, "/x//y"), "[]");
        let r = rules(&["/exact:/other"]);
        assert_eq!(rewrite_path(&r, "/exact"), "/other");
        assert_eq!(rewrite_path(&r, "/exact/more"), "/exact/more");
        // Many stars on a long path that does not match: refused at once, no backtracking.
        let r = rules(&["/*a*a*a*a*b:/$5"]);
        let long = format!("/{}", "a".repeat(100_000));
        assert_eq!(rewrite_path(&r, &long), long);
    }

    #[test]
    fn malformed_rules() {
        for bad in ["/api/*", "api/*:/$1", "/api/*:/$2", "/api:/$1", "/a/*:/$0"] {
            assert!(compile(bad).is_err(), "{bad}");
        }
    }
}
