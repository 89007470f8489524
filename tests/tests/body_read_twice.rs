//! A controller method with two arguments that read the body is refused by `build()`, however
//! they are named: here an alias of `Json<T>` beside a `Form<T>`. Its own test binary, so the
//! refused controller stays out of the other tests.

use framework::extract::{Form, Json};
use framework::{App, BuildError, FromState, Validate, controller};
use serde::Deserialize;

#[derive(Deserialize, Validate)]
struct Note {
    text: String,
}

type Body = Json<Note>;

#[derive(FromState)]
struct Twice;

#[controller(prefix = "/twice")]
impl Twice {
    #[post("/")]
    async fn both(&self, a: Body, b: Form<Note>) -> String {
        format!("{} {}", a.text, b.text)
    }
}

#[test]
fn two_body_arguments_under_any_name_fail_the_build() {
    let Err(err) = App::new().mount_controllers().build() else {
        panic!("two bodies are refused");
    };
    assert!(
        matches!(&err, BuildError::BodyReadTwice { route } if route.contains("Twice::both")),
        "{err:?}"
    );
    assert!(err.to_string().contains("a body is read once"), "{err}");
}
