//! Config that can grow: every public config struct of the crate is `#[non_exhaustive]`, so a
//! new field breaks no program (they are made from `Default` or a constructor and chained
//! setters, `LoggerConfig::default().format(..)`). Checked on the source, so a new config
//! struct without the attribute fails here, named.

use std::path::Path;

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Config structs that are plain settings with public fields: `*Config`, `*Limits`, and the
/// compressors' level settings.
fn is_config(name: &str) -> bool {
    name.ends_with("Config")
        || name.ends_with("Limits")
        || ["Gzip", "Deflate", "Brotli", "Zstd"].contains(&name)
}

#[test]
fn every_public_config_struct_is_non_exhaustive() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut seen = 0;
    let mut open = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let Some(rest) = line.strip_prefix("pub struct ") else {
                continue;
            };
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !is_config(&name) || !rest.trim_end().ends_with('{') {
                continue;
            }
            seen += 1;
            let attributes = lines[..i]
                .iter()
                .rev()
                .take_while(|l| l.starts_with("#[") || l.starts_with("///"));
            if !attributes
                .into_iter()
                .any(|l| l.starts_with("#[non_exhaustive]"))
            {
                open.push(format!(
                    "{name} ({})",
                    file.strip_prefix(&src).unwrap().display()
                ));
            }
        }
    }
    assert!(seen >= 30, "found only {seen} config structs");
    assert!(
        open.is_empty(),
        "config structs a new field would break: {open:?}"
    );
}
