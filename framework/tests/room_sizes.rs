//! Rooms stay small: no source file of the crate is over 500 lines, so a file that grows past
//! it is split by job before it lands instead of becoming a bag. Unit tests in their own files
//! (`tests.rs` beside the module they test) count apart; a test module written inline counts
//! with its file, which is the reason to move it out.

use std::path::{Path, PathBuf};

/// The most lines a file of `src/` may have.
const MAX_LINES: usize = 500;

fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            source_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Whether `path` holds only unit tests: a `tests.rs`, or a file under a `tests/` folder.
fn is_test_file(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "tests.rs")
        || path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == "tests")
}

#[test]
fn no_source_file_is_over_500_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    source_files(&src, &mut files);
    assert!(files.len() > 100, "found only {} files", files.len());
    let mut over: Vec<(usize, String)> = files
        .iter()
        .filter(|path| !is_test_file(path))
        .filter_map(|path| {
            let lines = std::fs::read_to_string(path).expect("read").lines().count();
            let name = path.strip_prefix(&src).unwrap().display().to_string();
            (lines > MAX_LINES).then_some((lines, name))
        })
        .collect();
    over.sort_unstable_by(|a, b| b.cmp(a));
    assert!(
        over.is_empty(),
        "files of framework/src over {MAX_LINES} lines (split them by job, or move their unit \
         tests to a tests.rs beside them): {}",
        over.iter()
            .map(|(lines, name)| format!("{name} ({lines})"))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

#[test]
fn test_files_are_told_apart() {
    assert!(is_test_file(Path::new("src/app/tests.rs")));
    assert!(is_test_file(Path::new("src/session/tests/flood.rs")));
    assert!(!is_test_file(Path::new("src/app/mod.rs")));
    assert!(!is_test_file(Path::new("src/testing.rs")));
}
