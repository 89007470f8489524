//! Two controllers claiming the same method and path: the build names both handlers.
//! Its own test binary, so these controllers do not leak into other tests.

use framework::{App, Context, FromState, Result, State, controller};

struct Alpha;
struct Beta;

impl FromState for Alpha {
    fn from_state(_: &State) -> Result<Self> {
        Ok(Alpha)
    }
}
impl FromState for Beta {
    fn from_state(_: &State) -> Result<Self> {
        Ok(Beta)
    }
}

#[controller(prefix = "/x")]
impl Alpha {
    #[get("/same")]
    async fn first(&self, _ctx: &mut Context) -> Result<&'static str> {
        Ok("a")
    }
}

#[controller]
impl Beta {
    #[get("/x/same")]
    async fn second(&self, _ctx: &mut Context) -> Result<&'static str> {
        Ok("b")
    }
}

#[test]
fn duplicate_is_refused_naming_both_handlers_in_a_stable_order() {
    for _ in 0..3 {
        let err = App::new()
            .mount_controllers()
            .build()
            .err()
            .expect("refused");
        assert_eq!(
            err.to_string(),
            "duplicate route GET /x/same: Alpha::first and Beta::second"
        );
    }
}
