#[test]
fn a_context_value_set_again_replaces_the_first() {
    let service = crate::App::new().build().unwrap();
    let (parts, body) = http::Request::new(crate::body::RequestBody::Empty).into_parts();
    let mut ctx = service.context(parts, body, "127.0.0.1:1".parse().unwrap());
    ctx.set_value("a", 1u32);
    ctx.set_value("b", "x");
    ctx.set_value(String::from("a"), 2u32);
    assert_eq!(ctx.value::<u32>("a"), Some(&2));
    assert_eq!(ctx.value::<String>("a"), None);
    assert_eq!(ctx.value_str("b"), Some("x"));
    assert_eq!(ctx.value::<u32>("c"), None);
}
