//! The API crate is light: built alone, its tree has neither hyper's server nor the user
//! service's stores, while the service's tree has both (so the check can tell them apart).

use std::process::Command;

/// `cargo tree` of `package` with the features each dependency is built with, one
/// `name feature "x"` or `name vX` per line.
fn tree(package: &str, features: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    command
        .args([
            "tree",
            "--offline",
            "--edges",
            "normal,features",
            "--prefix",
            "none",
        ])
        .args(["--package", package])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if !features.is_empty() {
        command.args(["--features", &features.join(",")]);
    }
    let out = command.output().expect("run cargo tree");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn has_hyper_server(tree: &str) -> bool {
    tree.lines()
        .any(|line| line.starts_with("hyper ") && line.contains("feature \"server\""))
}

fn has_store(tree: &str) -> bool {
    tree.lines()
        .any(|line| line.starts_with("sqlx ") || line.starts_with("redis "))
}

#[test]
fn the_api_crate_builds_without_hyper_server_or_stores() {
    for features in [&[][..], &["client"][..]] {
        let api = tree("user-api", features);
        assert!(api.lines().any(|l| l.starts_with("framework ")), "{api}");
        assert!(!has_hyper_server(&api), "{features:?}: {api}");
        assert!(!has_store(&api), "{features:?}: {api}");
    }
    let service = tree("user-service", &[]);
    assert!(has_hyper_server(&service), "{service}");
    assert!(has_store(&service), "{service}");
}
