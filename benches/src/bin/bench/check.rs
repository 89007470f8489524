//! The callgrind check: raw hyper, raw hyper sending a request id (`hyper-id`, the fair
//! reference: every framework answer carries an `X-Request-Id`) and the framework answer `GET
//! /json` under callgrind (200 then 2 200 requests on one connection, as in the report), and
//! the check fails when the framework's instructions per request are more than [`LIMIT`] times
//! `hyper-id`'s. Instruction counts do not move with machine load, so this is a benchmark check
//! that CI can run, not a timed test. Under a minute, with the servers built
//! (`--no-default-features` leaves axum and actix-web out of the build).
//!
//! Judging against a reference measured in the same run, rather than against a committed
//! figure, keeps the check meaningful across compilers and dependency updates that move both
//! servers alike. Every answer measured is checked to be the route's (status and body), and
//! all three servers must be measured. A ratio over the limit is measured twice more and the
//! median of the three is judged (runs have been seen to come out far off, both ways: 5 048
//! and 5 124 instructions, about half of raw hyper's own figure, when the first server process
//! wrote the static files under callgrind, which `benches::static_dir` now does before any
//! server starts), so a lone outlier neither fails CI nor passes it. A framework figure below
//! raw hyper's (the framework runs on hyper, so it cannot cost less) fails the check as a
//! broken measurement. Each run has its own ports and callgrind files (see `servers.rs`), so
//! two runs at once cannot measure each other's servers.

use crate::callgrind;
use crate::load::Route;
use crate::options::Options;
use crate::servers::ServerKind;

/// The most the framework may cost on `GET /json`, as a multiple of `hyper-id`'s
/// instructions per request (1.037× when the check moved to it).
pub(crate) const LIMIT: f64 = 1.08;

/// The request counts: few enough for CI, enough for start-up to cancel out.
const REQUESTS: (u64, u64) = (200, 2_200);

/// The middle value (the lower middle of an even count).
fn median(figures: &mut [f64]) -> f64 {
    figures.sort_by(f64::total_cmp);
    figures[(figures.len() - 1) / 2]
}

/// Whether the framework's figure is within the limit of the reference's.
fn within(framework: f64, reference: f64) -> bool {
    framework <= reference * LIMIT
}

pub(crate) fn run(options: &Options) -> std::io::Result<()> {
    if std::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .is_err()
    {
        return Err(std::io::Error::other(
            "valgrind is not installed (Debian: apt-get install valgrind)",
        ));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let options = Options {
        servers: Some(vec![
            "hyper".to_owned(),
            "hyper-id".to_owned(),
            "framework".to_owned(),
        ]),
        ..options.clone()
    };
    let counts = callgrind::measure_all(&runtime, Route::Json, REQUESTS, &options)?;
    let figure = |counts: &[(ServerKind, f64)], kind| {
        counts.iter().find(|(k, _)| *k == kind).map(|(_, v)| *v)
    };
    let mut framework = figure(&counts, ServerKind::Framework)
        .ok_or_else(|| std::io::Error::other("the framework's server could not be measured"))?;
    let reference = figure(&counts, ServerKind::HyperId)
        .ok_or_else(|| std::io::Error::other("hyper-id's server could not be measured"))?;
    // Without raw hyper's figure a broken measurement could not be told apart.
    let hyper = figure(&counts, ServerKind::Hyper)
        .ok_or_else(|| std::io::Error::other("raw hyper's server could not be measured"))?;
    if !within(framework, reference) {
        // Counts repeat for the same binary, but runs have been seen to come out far off. A
        // real change measures the same again; the median of three is judged.
        println!(
            "callgrind check: {framework:.0} is over {LIMIT}× hyper-id's {reference:.0}; \
             measuring twice more"
        );
        let again = Options {
            servers: Some(vec!["framework".to_owned()]),
            ..options
        };
        let mut figures = vec![framework];
        for _ in 0..2 {
            let counts = callgrind::measure_all(&runtime, Route::Json, REQUESTS, &again)?;
            figures.extend(figure(&counts, ServerKind::Framework));
        }
        framework = median(&mut figures);
        println!("callgrind check: measured {figures:.0?}, median {framework:.0}");
    }
    if framework < hyper || reference < hyper {
        return Err(std::io::Error::other(format!(
            "the framework measured {framework:.0} and hyper-id {reference:.0} instructions per \
             request, raw hyper {hyper:.0}: not credible figures (another server on the port?)"
        )));
    }
    println!(
        "callgrind check, GET /json: framework {framework:.0} instructions/request, {:.3}× \
         hyper-id's {reference:.0} (limit {LIMIT}×; raw hyper {hyper:.0})",
        framework / reference
    );
    if within(framework, reference) {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "the framework's GET /json costs {:.3}× hyper-id's instructions, over the {LIMIT}× \
             limit",
            framework / reference
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_three_ignores_one_outlier_either_way() {
        assert_eq!(median(&mut [5_048.0, 11_400.0, 11_390.0]), 11_390.0);
        assert_eq!(median(&mut [11_400.0, 30_000.0, 11_410.0]), 11_410.0);
        assert_eq!(median(&mut [9_000.0]), 9_000.0);
    }

    #[test]
    fn the_limit_is_the_boundary() {
        assert!(within(10_800.0, 10_000.0));
        assert!(!within(10_801.0, 10_000.0));
        assert!(within(9_000.0, 10_000.0));
    }
}
