//! Compile-time behaviour of the macros: what expands and runs, and what is refused with which
//! message at which token. Regenerate the `.stderr` files with `TRYBUILD=overwrite` and read
//! every one before committing.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
