use super::build::join_path;

#[test]
fn joins_prefix_and_path() {
    assert_eq!(join_path("/users", "/v1/me"), "/users/v1/me");
    assert_eq!(join_path("/users/", "/v1/me"), "/users/v1/me");
    assert_eq!(join_path("/users", "/"), "/users");
    assert_eq!(join_path("", "/"), "/");
    assert_eq!(join_path("", "/a"), "/a");
}
