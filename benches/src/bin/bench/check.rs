//! The callgrind regression check: raw hyper and the framework answer `GET /json` under
//! callgrind (200 then 2 200 requests on one connection, as in the report), and the check fails
//! when the framework's instructions per request are more than [`TOLERANCE`] above the figure
//! committed in `benches/callgrind-baseline`. Instruction counts do not move with machine load,
//! so this is a benchmark check that CI can run, not a timed test. Under a minute, with the two
//! servers built (`--no-default-features` leaves axum and actix-web out of the build).
//!
//! A change that makes the framework faster must lower the committed figure, so the gain is
//! kept: a measurement more than the tolerance under it fails the check, naming the figure to
//! commit. Every answer measured is checked to be the route's (status and body), and both
//! servers must be measured: without raw hyper's figure there is no sanity check. A figure more than the
//! tolerance away from the baseline *in either direction* is suspect (runs read 5 048 and
//! 5 124, about half of raw hyper's own figure: the first server process wrote the static files
//! under callgrind, which `benches::static_dir` now does before any server starts): it is measured twice more and the median of the
//! three is judged, so a lone outlier neither fails CI nor passes it. A framework figure below
//! raw hyper's (the framework runs on hyper, so it cannot cost less) fails the check as a broken
//! measurement. Each run has its own ports and callgrind files (see `servers.rs`), so two runs
//! at once cannot measure each other's servers.

use std::path::PathBuf;

use crate::callgrind;
use crate::load::Route;
use crate::options::Options;
use crate::servers::ServerKind;

/// How far above the baseline a measurement may be.
pub(crate) const TOLERANCE: f64 = 0.05;

/// The request counts: few enough for CI, enough for start-up to cancel out.
const REQUESTS: (u64, u64) = (200, 2_200);

fn baseline_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("callgrind-baseline")
}

/// The committed figure: the line `json framework <instructions>`; `#` starts a comment.
fn read_baseline() -> std::io::Result<f64> {
    let path = baseline_path();
    let text = std::fs::read_to_string(&path)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    parse_baseline(&text).ok_or_else(|| {
        std::io::Error::other(format!(
            "{}: no line `json framework <instructions per request>`",
            path.display()
        ))
    })
}

fn parse_baseline(text: &str) -> Option<f64> {
    text.lines()
        .map(|line| line.split('#').next().unwrap_or("").split_whitespace())
        .find_map(
            |mut words| match (words.next(), words.next(), words.next()) {
                (Some("json"), Some("framework"), Some(n)) => n.parse().ok(),
                _ => None,
            },
        )
}

/// What the check concludes from a measurement.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// Over the tolerance: the check fails.
    Regressed,
    /// More than the tolerance under the baseline: the check fails until the committed figure
    /// is lowered.
    Improved,
    Within,
}

/// The middle value (the lower middle of an even count).
fn median(figures: &mut [f64]) -> f64 {
    figures.sort_by(f64::total_cmp);
    figures[(figures.len() - 1) / 2]
}

fn judge(measured: f64, baseline: f64) -> Verdict {
    if measured > baseline * (1.0 + TOLERANCE) {
        Verdict::Regressed
    } else if measured < baseline * (1.0 - TOLERANCE) {
        Verdict::Improved
    } else {
        Verdict::Within
    }
}

pub(crate) fn run(options: &Options) -> std::io::Result<()> {
    let baseline = read_baseline()?;
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
        servers: Some(vec!["hyper".to_owned(), "framework".to_owned()]),
        ..options.clone()
    };
    let counts = callgrind::measure_all(&runtime, Route::Json, REQUESTS, &options)?;
    let figure = |counts: &[(ServerKind, f64)], kind| {
        counts.iter().find(|(k, _)| *k == kind).map(|(_, v)| *v)
    };
    let mut framework = figure(&counts, ServerKind::Framework)
        .ok_or_else(|| std::io::Error::other("the framework's server could not be measured"))?;
    // Without the reference the figure cannot be told apart from a broken measurement.
    let hyper = figure(&counts, ServerKind::Hyper)
        .ok_or_else(|| std::io::Error::other("raw hyper's server could not be measured"))?;
    if judge(framework, baseline) != Verdict::Within {
        // Counts repeat for the same binary, but runs have been seen to come out far off, both
        // ways. A real change measures the same again; the median of three is judged.
        println!(
            "callgrind check: {framework:.0} is more than {:.0}% from the baseline {baseline:.0}; \
             measuring twice more",
            TOLERANCE * 100.0
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
    if framework < hyper {
        return Err(std::io::Error::other(format!(
            "the framework measured {framework:.0} instructions per request, below raw hyper's \
             {hyper:.0}: not a credible figure (another server on the port?)"
        )));
    }
    println!(
        "callgrind check, GET /json: framework {framework:.0} instructions/request \
         ({:.2}× raw hyper's {hyper:.0}), baseline {baseline:.0}, limit {:.0} (+{:.0}%)",
        framework / hyper,
        baseline * (1.0 + TOLERANCE),
        TOLERANCE * 100.0
    );
    match judge(framework, baseline) {
        Verdict::Regressed => Err(std::io::Error::other(format!(
            "the framework's GET /json costs {:.1}% more instructions than the baseline in {}",
            (framework / baseline - 1.0) * 100.0,
            baseline_path().display()
        ))),
        // A gain left out of the baseline could be lost again unnoticed, up to the tolerance
        // above the old figure: the check passes once the figure is committed.
        Verdict::Improved => Err(std::io::Error::other(format!(
            "{:.1}% under the baseline: write {framework:.0} into {} to keep the gain",
            (1.0 - framework / baseline) * 100.0,
            baseline_path().display()
        ))),
        Verdict::Within => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_committed_line() {
        assert_eq!(
            parse_baseline("# comment\njson hyper 9000\njson framework 14931 # measured\n"),
            Some(14931.0)
        );
        assert_eq!(parse_baseline("json framework many"), None);
        assert_eq!(parse_baseline(""), None);
    }

    #[test]
    fn the_committed_baseline_parses() {
        assert!(read_baseline().is_ok());
    }

    #[test]
    fn the_median_of_three_ignores_one_outlier_either_way() {
        assert_eq!(median(&mut [5_048.0, 11_400.0, 11_390.0]), 11_390.0);
        assert_eq!(median(&mut [11_400.0, 30_000.0, 11_410.0]), 11_410.0);
        assert_eq!(median(&mut [9_000.0]), 9_000.0);
    }

    #[test]
    fn five_percent_is_the_boundary() {
        assert_eq!(judge(10_500.0, 10_000.0), Verdict::Within);
        assert_eq!(judge(10_501.0, 10_000.0), Verdict::Regressed);
        assert_eq!(judge(9_500.0, 10_000.0), Verdict::Within);
        assert_eq!(judge(9_499.0, 10_000.0), Verdict::Improved);
    }
}
