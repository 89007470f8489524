// `#[validator(...)]`: a named validator declares its schema. It is still called as the
// function it was written as, checks as before, and the fields it is named on carry its
// keywords in the type's schema, beside the built-in rules (the tighter bound wins, a second
// pattern joins through `allOf`). A plain function validator adds nothing to the schema.

use framework::Validate;
use framework::validate::ValidatorSchema;
use serde_json::json;

/// 2-20 ASCII letters, digits or `_`.
#[framework::validator(min_length = 2, max_length = 20, pattern = "^[A-Za-z0-9_]*$")]
pub fn xUserAccount(value: &str) -> Result<(), &'static str> {
    let ok = (2..=20).contains(&value.len())
        && value.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok { Ok(()) } else { Err("must be 2-20 letters, digits or _") }
}

#[framework::validator(minimum = 1, maximum = 100)]
fn xPercent(value: &u8) -> Result<(), String> {
    if (1..=100).contains(value) { Ok(()) } else { Err(format!("{value} is not 1-100")) }
}

#[allow(non_snake_case)]
fn xPlain(value: &str) -> Result<(), &'static str> {
    if value == "no" { Err("must not be no") } else { Ok(()) }
}

#[derive(Validate)]
struct Params {
    #[validate(length(max = 8), xUserAccount, hex)]
    account: String,
    #[validate(xPercent)]
    share: u8,
    #[validate(xPlain)]
    note: String,
}

fn main() {
    // Still a function to its callers.
    assert!(xUserAccount("ab").is_ok());
    assert_eq!(xUserAccount("a"), Err("must be 2-20 letters, digits or _"));
    assert_eq!(xPercent(&0), Err("0 is not 1-100".to_owned()));

    let ok = Params { account: "ab12".into(), share: 5, note: "yes".into() };
    assert!(ok.validate().is_ok());
    let err = Params { account: "a".into(), ..ok }.validate().unwrap_err();
    assert_eq!(err.code(), "xUserAccount");
    let ok = Params { account: "ab12".into(), share: 5, note: "yes".into() };
    let err = Params { share: 101, ..ok }.validate().unwrap_err();
    assert_eq!(err.code(), "xPercent");
    assert_eq!(err.message(), "share: 101 is not 1-100");

    // The declared keywords, on their own and in the derive's schema.
    let mut property = serde_json::Map::new();
    xUserAccount.describe(&mut property);
    assert_eq!(
        serde_json::Value::Object(property),
        json!({"minLength": 2, "maxLength": 20, "pattern": "^[A-Za-z0-9_]*$"})
    );
    let mut schema = json!({"type": "object", "properties": {
        "account": {"type": "string"},
        "share": {"type": "integer"},
        "note": {"type": "string"},
    }});
    <Params as Validate>::describe_rules(&mut schema);
    assert_eq!(
        schema["properties"]["account"],
        json!({
            "type": "string",
            "maxLength": 8,
            "minLength": 2,
            "pattern": "^[A-Za-z0-9_]*$",
            "allOf": [{"pattern": "^[0-9a-fA-F]*$"}],
        })
    );
    assert_eq!(
        schema["properties"]["share"],
        json!({"type": "integer", "minimum": 1, "maximum": 100})
    );
    assert_eq!(schema["properties"]["note"], json!({"type": "string"}));
    // Described twice (one type on two routes), the schema stays the same.
    let before = schema.clone();
    <Params as Validate>::describe_rules(&mut schema);
    assert_eq!(schema, before);
}
