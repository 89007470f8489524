use super::*;

/// What the file system says for a path under a file and for a name too long to exist is
/// "not found", by the errors' portable kinds.
#[test]
fn a_path_under_a_file_and_a_too_long_name_are_not_found() {
    let dir = std::env::temp_dir().join(format!("static-kinds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("file.txt");
    std::fs::write(&file, b"x").unwrap();
    let under_a_file = std::fs::metadata(file.join("child")).unwrap_err();
    let too_long = std::fs::metadata(dir.join("n".repeat(300))).unwrap_err();
    let missing = std::fs::metadata(dir.join("missing")).unwrap_err();
    for err in [&under_a_file, &too_long, &missing] {
        assert!(is_not_found(err), "{err:?}");
    }
    // An error of another kind is not a miss.
    assert!(!is_not_found(&std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        "denied"
    )));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn cache_control_forms() {
    assert_eq!(cache_control(None, None), "no-cache");
    assert_eq!(
        cache_control(Some(Duration::from_secs(60)), None),
        "public, max-age=60"
    );
    assert_eq!(
        cache_control(
            Some(Duration::from_secs(60)),
            Some(Duration::from_secs(600))
        ),
        "public, max-age=60, s-maxage=600"
    );
}
