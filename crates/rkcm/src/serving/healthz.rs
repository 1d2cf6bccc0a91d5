//! `/healthz` of the controller manager, as kube's `healthz` handler with the checks
//! kube-controller-manager installs: `leaderElection` (the lease watchdog) when electing, one
//! check per started controller (`controllerhealthz`), `ping` when there is nothing else; each
//! check also at `/healthz/<name>`. Every run of the root handler is recorded in component-base's
//! `kubernetes_healthcheck` SLI metrics, served at `/metrics/slis`.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

/// A health check: `Err` carries why it failed.
pub type CheckFn = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// The outcome of the root handler: HTTP status 200 or 500, and the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Whether every check not excluded passed.
    pub healthy: bool,
    /// What kube writes (`ok`, the verbose listing, or the failure listing).
    pub body: String,
}

/// The named checks, in installation order, and their SLI metrics.
#[derive(Default)]
pub struct HealthChecks {
    checks: RwLock<Vec<(String, CheckFn)>>,
    slis: Mutex<Slis>,
}

#[derive(Default)]
struct Slis {
    /// Gauge per check: 1 healthy, 0 not.
    last: BTreeMap<String, u8>,
    /// Counter per (check, status).
    totals: BTreeMap<(String, &'static str), u64>,
}

/// kube's `PingHealthz`: always healthy.
pub fn ping() -> CheckFn {
    Arc::new(|| Ok(()))
}

impl HealthChecks {
    /// Installs `check` as `name` (a later check of the same name replaces it).
    pub fn add(&self, name: &str, check: CheckFn) {
        let mut checks = self.checks.write();
        match checks.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = check,
            None => checks.push((name.to_string(), check)),
        }
    }

    /// The names of the installed checks.
    pub fn names(&self) -> Vec<String> {
        self.checks.read().iter().map(|(n, _)| n.clone()).collect()
    }

    fn installed(&self) -> Vec<(String, CheckFn)> {
        let checks = self.checks.read();
        if checks.is_empty() {
            vec![("ping".to_string(), ping())]
        } else {
            checks.clone()
        }
    }

    /// Runs every check but `excluded`, as kube's `handleRootHealth` for `/healthz`
    /// (`verbose`: list each check even when all pass).
    pub fn run(&self, excluded: &[String], verbose: bool) -> Report {
        let mut excluded: Vec<String> = excluded.to_vec();
        let mut listing = String::new();
        let mut failed = Vec::new();
        for (name, check) in self.installed() {
            if let Some(i) = excluded.iter().position(|e| *e == name) {
                excluded.remove(i);
                listing.push_str(&format!("[+]{name} excluded: ok\n"));
                continue;
            }
            match check() {
                Ok(()) => {
                    self.observe(&name, true);
                    listing.push_str(&format!("[+]{name} ok\n"));
                }
                Err(why) => {
                    self.observe(&name, false);
                    tracing::debug!(check = %name, %why, "healthz check failed");
                    listing.push_str(&format!("[-]{name} failed: reason withheld\n"));
                    failed.push(name);
                }
            }
        }
        if !excluded.is_empty() {
            excluded.sort();
            excluded.dedup();
            let quoted: Vec<String> = excluded.iter().map(|e| format!("{e:?}")).collect();
            listing.push_str(&format!(
                "warn: some health checks cannot be excluded: no matches for {}\n",
                quoted.join(",")
            ));
        }
        if !failed.is_empty() {
            return Report {
                healthy: false,
                // http.Error appends a newline.
                body: format!("{listing}healthz check failed\n"),
            };
        }
        Report {
            healthy: true,
            body: if verbose {
                format!("{listing}healthz check passed\n")
            } else {
                "ok".to_string()
            },
        }
    }

    /// Runs the check `name` alone (`/healthz/<name>`): `None` when there is no such check.
    pub fn run_one(&self, name: &str) -> Option<Result<(), String>> {
        self.installed()
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, check)| check())
    }

    fn observe(&self, name: &str, healthy: bool) {
        let mut slis = self.slis.lock();
        slis.last.insert(name.to_string(), u8::from(healthy));
        let status = if healthy { "success" } else { "error" };
        *slis.totals.entry((name.to_string(), status)).or_default() += 1;
    }

    /// The SLI metrics in the Prometheus text format, as `/metrics/slis` serves them.
    pub fn encode_slis(&self) -> String {
        let slis = self.slis.lock();
        let mut out = String::new();
        out.push_str("# HELP kubernetes_healthcheck [STABLE] This metric records the result of a single healthcheck.\n");
        out.push_str("# TYPE kubernetes_healthcheck gauge\n");
        for (name, value) in &slis.last {
            out.push_str(&format!(
                "kubernetes_healthcheck{{name=\"{name}\",type=\"healthz\"}} {value}\n"
            ));
        }
        out.push_str("# HELP kubernetes_healthchecks_total [STABLE] This metric records the results of all healthcheck.\n");
        out.push_str("# TYPE kubernetes_healthchecks_total counter\n");
        for ((name, status), count) in &slis.totals {
            out.push_str(&format!(
                "kubernetes_healthchecks_total{{name=\"{name}\",status=\"{status}\",type=\"healthz\"}} {count}\n"
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn without_checks_ping_answers() {
        let checks = HealthChecks::default();
        assert_eq!(checks.run(&[], false).body, "ok");
        assert_eq!(
            checks.run(&[], true).body,
            "[+]ping ok\nhealthz check passed\n"
        );
        assert_eq!(checks.run_one("ping"), Some(Ok(())));
        assert_eq!(checks.run_one("nope"), None);
    }

    /// kube's `TestMulitipleChecks` and `TestCheckerNames`-style listing: failures withhold
    /// their reason, exclusions are reported, unknown exclusions warned about.
    #[test]
    fn failures_withhold_the_reason_and_exclusions_are_listed() {
        let checks = HealthChecks::default();
        let lease_ok = Arc::new(AtomicBool::new(true));
        let flag = Arc::clone(&lease_ok);
        checks.add(
            "leaderElection",
            Arc::new(move || {
                if flag.load(Ordering::SeqCst) {
                    Ok(())
                } else {
                    Err(
                        "failed election to renew leadership on lease kube-controller-manager"
                            .into(),
                    )
                }
            }),
        );
        checks.add("deployment-controller", ping());
        assert_eq!(
            checks.run(&[], false),
            Report {
                healthy: true,
                body: "ok".into()
            }
        );
        lease_ok.store(false, Ordering::SeqCst);
        assert_eq!(
            checks.run(&[], false),
            Report {
                healthy: false,
                body: "[-]leaderElection failed: reason withheld\n[+]deployment-controller ok\nhealthz check failed\n".into()
            }
        );
        assert_eq!(
            checks.run(&["leaderElection".into(), "bogus".into()], true),
            Report {
                healthy: true,
                body: "[+]leaderElection excluded: ok\n[+]deployment-controller ok\nwarn: some health checks cannot be excluded: no matches for \"bogus\"\nhealthz check passed\n".into()
            }
        );
        assert_eq!(
            checks.run_one("leaderElection"),
            Some(Err(
                "failed election to renew leadership on lease kube-controller-manager".into()
            ))
        );
        let slis = checks.encode_slis();
        assert!(
            slis.contains("kubernetes_healthcheck{name=\"leaderElection\",type=\"healthz\"} 0\n"),
            "{slis}"
        );
        assert!(slis.contains("kubernetes_healthchecks_total{name=\"leaderElection\",status=\"success\",type=\"healthz\"} 1\n"), "{slis}");
        assert!(slis.contains("kubernetes_healthchecks_total{name=\"leaderElection\",status=\"error\",type=\"healthz\"} 1\n"), "{slis}");
        assert!(slis.contains("kubernetes_healthchecks_total{name=\"deployment-controller\",status=\"success\",type=\"healthz\"} 3\n"), "{slis}");
    }
}
