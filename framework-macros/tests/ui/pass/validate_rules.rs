// `#[derive(Validate)]` with every built-in rule, a custom validator, an `Option` field and
// `#[serde(rename)]`: the first failing rule of the first failing field is reported, with the
// rule's (or function's) name as code and the JSON name in the message.

use framework::Validate;
use serde::Deserialize;

#[allow(non_snake_case)]
fn xUserAccount(value: &str) -> Result<(), &'static str> {
    if value.starts_with('_') {
        Err("must not start with _")
    } else {
        Ok(())
    }
}

#[derive(Deserialize, Validate)]
struct Params {
    #[serde(rename = "userAccount")]
    #[validate(length(min = 2, max = 8), xUserAccount)]
    account: String,
    #[validate(range(min = 1, max = 120))]
    age: u8,
    #[validate(non_empty)]
    name: String,
    #[validate(hex)]
    token: String,
    #[validate(ascii)]
    label: String,
    #[validate(charset("abc"))]
    letters: String,
    #[validate(one_of("red", "green"))]
    color: String,
    #[validate(length(max = 3))]
    nickname: Option<String>,
    #[serde(default)]
    unchecked: String,
}

fn valid() -> Params {
    Params {
        account: "alice".into(),
        age: 30,
        name: "Alice".into(),
        token: "0aF9".into(),
        label: "plain".into(),
        letters: "abba".into(),
        color: "red".into(),
        nickname: None,
        unchecked: String::new(),
    }
}

fn refused(params: &Params) -> (String, String, String) {
    let err = params.validate().expect_err("should be refused");
    assert_eq!(err.status().as_u16(), 400);
    (
        err.category().to_owned(),
        err.code().to_owned(),
        err.message().to_owned(),
    )
}

fn check(params: Params, code: &str, message: &str) {
    let (category, got_code, got_message) = refused(&params);
    assert_eq!(category, "validate");
    assert_eq!(got_code, code);
    assert_eq!(got_message, message);
}

fn main() {
    valid().validate().expect("valid params");
    let params = Params {
        nickname: Some("bob".into()),
        ..valid()
    };
    params.validate().expect("present Option within bounds");
    assert!(valid().unchecked.is_empty());

    check(
        Params {
            account: "a".into(),
            ..valid()
        },
        "length",
        "userAccount: length must be between 2 and 8",
    );
    check(
        Params {
            account: "_alice".into(),
            ..valid()
        },
        "xUserAccount",
        "userAccount: must not start with _",
    );
    check(
        Params { age: 0, ..valid() },
        "range",
        "age: must be between 1 and 120",
    );
    check(
        Params {
            name: String::new(),
            ..valid()
        },
        "non_empty",
        "name: must not be empty",
    );
    check(
        Params {
            token: "0g".into(),
            ..valid()
        },
        "hex",
        "token: must be hexadecimal",
    );
    check(
        Params {
            label: "é".into(),
            ..valid()
        },
        "ascii",
        "label: must be ASCII",
    );
    check(
        Params {
            letters: "abd".into(),
            ..valid()
        },
        "charset",
        "letters: must only contain characters from \"abc\"",
    );
    check(
        Params {
            color: "blue".into(),
            ..valid()
        },
        "one_of",
        "color: must be one of red, green",
    );
    check(
        Params {
            nickname: Some("robert".into()),
            ..valid()
        },
        "length",
        "nickname: length must be between 0 and 3",
    );
    // The first failing field wins.
    check(
        Params {
            account: "a".into(),
            age: 0,
            ..valid()
        },
        "length",
        "userAccount: length must be between 2 and 8",
    );

    // A missing field reports `required`, whatever its rules.
    let err = framework::validate::bind_json::<Params>(br#"{"age": 30}"#)
        .err()
        .expect("missing field");
    assert_eq!(err.code(), "required");
    assert_eq!(err.message(), "userAccount: is required");
}
