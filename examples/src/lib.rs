//! Nothing to import: the programs are the `[[example]]` targets beside this file. See
//! `examples/README.md` for what each one shows and how to run it.
