use super::openapi_path;

#[test]
fn paths_are_written_with_braces() {
    assert_eq!(
        openapi_path("/users/:id/notes/{n}"),
        "/users/{id}/notes/{n}"
    );
    assert_eq!(openapi_path("/files/*path"), "/files/{path}");
    assert_eq!(openapi_path("/"), "/");
}
