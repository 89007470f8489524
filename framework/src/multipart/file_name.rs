//! What is left of a client's file name once it is safe to show and to use as a hint.

/// Longest sanitised file name, in bytes: what common file systems allow in one name.
const MAX_FILE_NAME: usize = 255;

/// A client's file name made safe: the last path component only (a name with `/` or `\`, as
/// some clients send a whole path), without control characters, invisible characters and
/// bidirectional controls (zero-width and direction marks, embeddings, overrides and isolates,
/// the byte order mark: `invoice\u{202e}gnp.exe` would show as `invoiceexe.png`), with `<>:"|?*` (which
/// Windows refuses, and `:` names a drive or a stream there) as `_`, without leading dots (no
/// `..`, no hidden file) and surrounding spaces or trailing dots, at most 255 bytes (the
/// extension kept). `None` when nothing is left.
///
/// ```
/// use framework::multipart::sanitise_file_name;
///
/// assert_eq!(sanitise_file_name("../../etc/passwd").as_deref(), Some("passwd"));
/// assert_eq!(sanitise_file_name("C:\\Users\\me\\cat.png").as_deref(), Some("cat.png"));
/// assert_eq!(sanitise_file_name("..").as_deref(), None);
/// assert_eq!(sanitise_file_name(".bashrc").as_deref(), Some("bashrc"));
/// assert_eq!(sanitise_file_name("a\u{0}b\r\n.txt").as_deref(), Some("ab.txt"));
/// ```
pub fn sanitise_file_name(raw: &str) -> Option<String> {
    let last = raw.rsplit(['/', '\\']).next().unwrap_or(raw);
    let cleaned: String = last
        .chars()
        .filter(|&c| !c.is_control() && !crate::reply::is_invisible_or_bidi(c))
        .map(|c| match c {
            '<' | '>' | ':' | '"' | '|' | '?' | '*' => '_',
            c => c,
        })
        .collect();
    let trimmed = cleaned
        .trim_start_matches(|c: char| c == '.' || c.is_whitespace())
        .trim_end_matches(|c: char| c == '.' || c.is_whitespace());
    if trimmed.is_empty() {
        return None;
    }
    Some(shorten(trimmed))
}

/// `name` cut to [`MAX_FILE_NAME`] bytes at a character boundary, its extension (up to 16
/// bytes) kept.
fn shorten(name: &str) -> String {
    if name.len() <= MAX_FILE_NAME {
        return name.to_owned();
    }
    let extension = name
        .rfind('.')
        .map(|dot| &name[dot..])
        .filter(|ext| ext.len() <= 16)
        .unwrap_or("");
    let mut stem_end = MAX_FILE_NAME - extension.len();
    while !name.is_char_boundary(stem_end) {
        stem_end -= 1;
    }
    format!("{}{extension}", &name[..stem_end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_components_are_dropped() {
        for (raw, expected) in [
            ("photo.jpg", Some("photo.jpg")),
            ("../../etc/passwd", Some("passwd")),
            ("..\\..\\boot.ini", Some("boot.ini")),
            ("/absolute/name.txt", Some("name.txt")),
            ("dir/", None),
            ("..", None),
            (".", None),
            ("...", None),
            ("", None),
            ("   ", None),
            (".hidden", Some("hidden")),
            ("name. ", Some("name")),
            ("C:evil.txt", Some("C_evil.txt")),
            ("a<b>c", Some("a_b_c")),
            ("tab\there", Some("tabhere")),
            ("del\u{7f}.txt", Some("del.txt")),
            ("résumé.pdf", Some("résumé.pdf")),
            ("invoice\u{202e}gnp.exe", Some("invoicegnp.exe")),
            (
                "a\u{200b}b\u{200f}c\u{2066}d\u{2069}\u{feff}.txt",
                Some("abcd.txt"),
            ),
            ("\u{202d}\u{202a}\u{200e}", None),
        ] {
            assert_eq!(sanitise_file_name(raw).as_deref(), expected, "{raw:?}");
        }
    }

    #[test]
    fn long_names_keep_their_extension_and_char_boundaries() {
        let long = format!("{}.png", "a".repeat(300));
        let short = sanitise_file_name(&long).unwrap();
        assert_eq!(short.len(), MAX_FILE_NAME);
        assert!(short.ends_with("aaa.png"));
        let wide = "é".repeat(200);
        let short = sanitise_file_name(&wide).unwrap();
        assert!(short.len() <= MAX_FILE_NAME);
        assert!(short.chars().all(|c| c == 'é'));
    }
}
