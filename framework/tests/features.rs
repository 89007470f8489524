//! The README's table of Cargo features lists every feature of `Cargo.toml`, and says which
//! are on by default as `Cargo.toml` does.

use std::collections::BTreeMap;

#[test]
fn the_readme_lists_every_feature_and_its_default() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let manifest = std::fs::read_to_string(format!("{dir}/Cargo.toml")).unwrap();
    // The `[features]` table: `name = [...]` lines up to the next table.
    let section = manifest
        .split("\n[features]\n")
        .nth(1)
        .expect("a [features] table");
    let section = section.split("\n[").next().unwrap_or(section);
    let features: BTreeMap<&str, &str> = section
        .lines()
        .filter_map(|line| line.split_once(" = "))
        .collect();
    let defaults: Vec<&str> = features["default"]
        .trim_matches(|c| c == '[' || c == ']')
        .split(',')
        .map(|f| f.trim().trim_matches('"'))
        .collect();
    let readme = std::fs::read_to_string(format!("{dir}/README.md")).unwrap();
    let table: BTreeMap<&str, &str> = readme
        .lines()
        .filter_map(|line| {
            let mut cells = line.strip_prefix("| `")?.split(" | ");
            let name = cells.next()?.strip_suffix('`')?;
            Some((name, cells.next()?))
        })
        .collect();
    for name in features.keys().filter(|name| **name != "default") {
        let default = if defaults.contains(name) { "yes" } else { "no" };
        assert_eq!(
            table.get(name),
            Some(&default),
            "feature `{name}`: the README's table must list it, default {default}"
        );
    }
    assert_eq!(
        table.len(),
        features.len() - 1,
        "the table names features Cargo.toml lacks"
    );
}
