//! `--profile DIR`: `perf record` attached to the `up` process for each scenario's timed phase,
//! and the functions where that process spent its CPU, read back with `perf report`.
//!
//! The recording is sampled (`-F 99`) with DWARF call graphs, so inclusive figures (a function
//! and everything it calls) are meaningful in a release build that keeps line tables
//! (`CARGO_PROFILE_RELEASE_DEBUG=line-tables-only`). `DIR/<scenario>.perf.data` stays for
//! `perf report -i` afterwards.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::Context as _;
use serde::Serialize;

/// How many entries of each list a scenario keeps.
const KEPT: usize = 25;

/// One function of a profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct Hot {
    /// Percent of the samples with this function on the stack.
    pub inclusive_percent: f64,
    /// Percent of the samples in this function itself.
    pub self_percent: f64,
    pub symbol: String,
}

/// The profile of one scenario: the project's own functions by inclusive share, and every
/// function by self share.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(super) struct Profile {
    /// The `perf.data` file.
    pub data: PathBuf,
    /// The project's functions (`rkcm_*`), largest inclusive share first.
    pub inclusive: Vec<Hot>,
    /// All functions, largest self share first.
    pub self_time: Vec<Hot>,
}

/// A `perf record` running against one process.
pub(super) struct Recorder {
    child: Child,
    data: PathBuf,
}

impl Recorder {
    /// Starts recording `pid` into `dir/<scenario>.perf.data`.
    pub fn attach(dir: &Path, scenario: &str, pid: u32) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let data = dir.join(format!("{scenario}.perf.data"));
        let child = Command::new("perf")
            .args([
                "record",
                "-F",
                "99",
                "--call-graph",
                "dwarf,16384",
                "-q",
                "-o",
            ])
            .arg(&data)
            .args(["-p", &pid.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting `perf record` (is perf installed and allowed to attach?)")?;
        Ok(Self { child, data })
    }

    /// Stops the recording and reads the profile back.
    pub fn finish(mut self) -> anyhow::Result<Profile> {
        // perf writes its data file on SIGINT.
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        self.child.wait().context("waiting for `perf record`")?;
        let report = |sort: &[&str]| -> anyhow::Result<String> {
            let out = Command::new("perf")
                .arg("report")
                .arg("-i")
                .arg(&self.data)
                // Without --no-inline, perf resolves inlined frames through addr2line,
                // which takes tens of minutes on a binary with line tables.
                .args(["--stdio", "--no-header", "--no-inline", "-g", "none"])
                .args(["--sort", "symbol"])
                .args(sort)
                .stderr(Stdio::null())
                .output()
                .context("running `perf report`")?;
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        };
        let mut inclusive = parse_report(&report(&["--children"])?);
        inclusive.retain(|h| is_ours(&h.symbol));
        inclusive.sort_by(|a, b| b.inclusive_percent.total_cmp(&a.inclusive_percent));
        inclusive.truncate(KEPT);
        let mut self_time = parse_report(&report(&["--no-children"])?);
        self_time.sort_by(|a, b| b.self_percent.total_cmp(&a.self_percent));
        self_time.truncate(KEPT);
        Ok(Profile {
            data: self.data,
            inclusive,
            self_time,
        })
    }
}

/// Whether `symbol` is one of the project's functions (a path in one of its crates, possibly
/// inside a generic's `<...>`).
fn is_ours(symbol: &str) -> bool {
    symbol.starts_with("rkcm_") || symbol.starts_with("<rkcm_") || symbol.starts_with("rkcm::")
}

/// The rows of `perf report --stdio --sort symbol`: with `--children`, `  12.50%  0.40%  [.] f`;
/// without it, `  0.40%  [.] f` (then the self share is the only figure).
fn parse_report(text: &str) -> Vec<Hot> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            if line.starts_with('#') || line.is_empty() {
                return None;
            }
            let (figures, symbol) = line
                .split_once("[.] ")
                .or_else(|| line.split_once("[k] "))?;
            let percents: Vec<f64> = figures
                .split_whitespace()
                .filter_map(|f| f.strip_suffix('%')?.parse().ok())
                .collect();
            let (inclusive_percent, self_percent) = match percents[..] {
                [children, own] => (children, own),
                [own] => (own, own),
                _ => return None,
            };
            // Columns perf pads after the symbol (`-      -` for unknown source lines) are not
            // part of it; symbols have no double spaces.
            let symbol = symbol.split("  ").next().unwrap_or(symbol).trim();
            Some(Hot {
                inclusive_percent,
                self_percent,
                symbol: symbol.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_with_and_without_children_parse() {
        let text = "# Samples: 10K\n#\n    45.10%     0.20%  [.] rkcm_server::http::handlers::update::update\n     3.00%     3.00%  [k] clear_page_erms\n\n";
        let rows = parse_report(text);
        assert_eq!(
            rows,
            vec![
                Hot {
                    inclusive_percent: 45.1,
                    self_percent: 0.2,
                    symbol: "rkcm_server::http::handlers::update::update".into()
                },
                Hot {
                    inclusive_percent: 3.0,
                    self_percent: 3.0,
                    symbol: "clear_page_erms".into()
                },
            ]
        );
        let own = parse_report("     7.25%  [.] malloc\n");
        assert_eq!(own[0].self_percent, 7.25);
        let padded =
            parse_report("     6.53%  [.] __memmove_avx_unaligned_erms                -      -\n");
        assert_eq!(padded[0].symbol, "__memmove_avx_unaligned_erms");
    }

    #[test]
    fn only_the_projects_functions_count_as_ours() {
        assert!(is_ours("rkcm_storage::redb::commit"));
        assert!(is_ours(
            "<rkcm_runtime::informer::Reflector<K> as core::ops::Drop>::drop"
        ));
        assert!(!is_ours("tokio::runtime::task::raw::poll"));
        assert!(!is_ours("serde_json::de::from_slice"));
    }
}
