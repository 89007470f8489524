//! Benchmarks live here (see issue 4).
