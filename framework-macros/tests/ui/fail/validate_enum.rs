// `Validate` is derived for structs with named fields only.

use framework::Validate;

#[derive(Validate)]
enum Role {
    Admin,
    User,
}

fn main() {
    let _ = Role::Admin;
    let _ = Role::User;
}
