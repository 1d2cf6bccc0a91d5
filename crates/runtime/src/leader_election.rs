//! Leader election on a coordination.k8s.io/v1 Lease. Mirrors client-go
//! `tools/leaderelection` (leaderelection.go) with its `resourcelock/leaselock.go`.
//!
//! Candidates try to acquire the Lease every `retry_period` (with jitter). A Lease is free when
//! it has no holder, or when its record has not changed for `lease_duration` *as observed by this
//! candidate's own monotonic clock* (client-go does not trust `renewTime` across machines). The
//! leader renews every `retry_period` and steps down if it cannot renew within `renew_deadline`.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use rand::Rng;
use tokio::time::Instant;

use crate::{Clock, Shutdown, SystemClock};

/// client-go's `JitterFactor` for the acquire loop.
const JITTER_FACTOR: f64 = 1.2;

/// Errors from configuring an elector.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The durations do not satisfy lease_duration > renew_deadline > 1.2 × retry_period.
    #[error("invalid leader election config: {0}")]
    InvalidConfig(String),
}

/// Settings of one election (defaults as kube-controller-manager: 15 s / 10 s / 2 s).
#[derive(Clone)]
pub struct LeaderElectionConfig {
    /// Name of the Lease object.
    pub lease_name: String,
    /// Namespace of the Lease object.
    pub lease_namespace: String,
    /// This candidate's identity (unique per process, e.g. `hostname_uuid`).
    pub identity: String,
    /// How long non-leaders wait after the last observed change before taking over.
    pub lease_duration: Duration,
    /// How long the leader keeps retrying a renewal before it gives up leadership.
    pub renew_deadline: Duration,
    /// Interval between acquire/renew attempts.
    pub retry_period: Duration,
    /// On shutdown, clear the holder so another candidate can take over at once.
    pub release_on_cancel: bool,
    /// Source of the `acquireTime` / `renewTime` written to the Lease.
    pub clock: Arc<dyn Clock>,
}

impl fmt::Debug for LeaderElectionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderElectionConfig")
            .field(
                "lease",
                &format!("{}/{}", self.lease_namespace, self.lease_name),
            )
            .field("identity", &self.identity)
            .field("lease_duration", &self.lease_duration)
            .field("renew_deadline", &self.renew_deadline)
            .field("retry_period", &self.retry_period)
            .field("release_on_cancel", &self.release_on_cancel)
            .finish()
    }
}

impl LeaderElectionConfig {
    /// A config for the Lease `namespace/name` with kube-controller-manager's defaults.
    pub fn new(
        lease_namespace: impl Into<String>,
        lease_name: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        Self {
            lease_name: lease_name.into(),
            lease_namespace: lease_namespace.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            release_on_cancel: true,
            clock: Arc::new(SystemClock),
        }
    }

    /// Checks the constraints client-go's `NewLeaderElector` enforces.
    pub fn validate(&self) -> Result<(), Error> {
        if self.lease_duration <= self.renew_deadline {
            return Err(Error::InvalidConfig(
                "lease_duration must be greater than renew_deadline".into(),
            ));
        }
        if self.renew_deadline.as_secs_f64() <= JITTER_FACTOR * self.retry_period.as_secs_f64() {
            return Err(Error::InvalidConfig(
                "renew_deadline must be greater than 1.2 × retry_period".into(),
            ));
        }
        if self.retry_period.is_zero() {
            return Err(Error::InvalidConfig("retry_period must be positive".into()));
        }
        if self.identity.is_empty() {
            return Err(Error::InvalidConfig("identity must not be empty".into()));
        }
        if self.lease_name.is_empty() || self.lease_namespace.is_empty() {
            return Err(Error::InvalidConfig(
                "lease name and namespace are required".into(),
            ));
        }
        Ok(())
    }
}

/// The election record kept in the Lease spec (client-go `LeaderElectionRecord`).
#[derive(Clone, Debug, PartialEq)]
struct Record {
    holder: String,
    lease_duration_seconds: i32,
    acquire_time: Option<MicroTime>,
    renew_time: Option<MicroTime>,
    transitions: i32,
}

impl Record {
    /// Whether a record first seen at `observed` is still held at `now`: for the duration its
    /// holder wrote (`leaseDurationSeconds`), not our own (client-go `isLeaseValid`).
    fn valid_at(&self, observed: Instant, now: Instant) -> bool {
        let duration = Duration::from_secs(u64::try_from(self.lease_duration_seconds).unwrap_or(0));
        observed + duration > now
    }

    fn from_spec(spec: Option<&LeaseSpec>) -> Self {
        let spec = spec.cloned().unwrap_or_default();
        Self {
            holder: spec.holder_identity.unwrap_or_default(),
            lease_duration_seconds: spec.lease_duration_seconds.unwrap_or_default(),
            acquire_time: spec.acquire_time,
            renew_time: spec.renew_time,
            transitions: spec.lease_transitions.unwrap_or_default(),
        }
    }

    fn to_spec(&self, base: Option<&LeaseSpec>) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.holder.clone()),
            lease_duration_seconds: Some(self.lease_duration_seconds),
            acquire_time: self.acquire_time.clone(),
            renew_time: self.renew_time.clone(),
            lease_transitions: Some(self.transitions),
            // Fields this elector does not manage are kept as they were.
            preferred_holder: base.and_then(|b| b.preferred_holder.clone()),
            strategy: base.and_then(|b| b.strategy.clone()),
        }
    }
}

#[derive(Default)]
struct Observed {
    record: Option<Record>,
    /// When this candidate last saw the record change (monotonic).
    time: Option<Instant>,
    /// The Lease as last read or written (carries the resourceVersion for updates).
    lease: Option<Lease>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ElectionLabels {
    name: String,
}

/// `leader_election_master_status{name}`: 1 while leading, 0 otherwise (client-go leader metrics).
fn master_status() -> &'static Family<ElectionLabels, Gauge> {
    static FAMILY: OnceLock<Family<ElectionLabels, Gauge>> = OnceLock::new();
    FAMILY.get_or_init(|| {
        crate::metrics::register(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease.",
            Family::default(),
        )
    })
}

/// A candidate in one leader election. Clones share the same state.
#[derive(Clone)]
pub struct LeaderElector {
    inner: Arc<Inner>,
}

struct Inner {
    api: Api<Lease>,
    config: LeaderElectionConfig,
    observed: Mutex<Observed>,
    leading: AtomicBool,
}

impl fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderElector")
            .field("config", &self.inner.config)
            .field("is_leader", &self.is_leader())
            .field("leader", &self.leader())
            .finish()
    }
}

impl LeaderElector {
    /// A candidate using the Lease described by `config`, through `client`.
    pub fn new(client: Client, config: LeaderElectionConfig) -> Result<Self, Error> {
        config.validate()?;
        let api = Api::namespaced(client, &config.lease_namespace);
        Ok(Self {
            inner: Arc::new(Inner {
                api,
                config,
                observed: Mutex::new(Observed::default()),
                leading: AtomicBool::new(false),
            }),
        })
    }

    /// Whether this candidate is currently leading (between acquiring the lease and stepping down).
    pub fn is_leader(&self) -> bool {
        self.inner.leading.load(Ordering::Acquire)
    }

    /// kube's `LeaderElector.Check`, behind the `leaderElection` health check: an error once
    /// this candidate leads but has not seen its lease renewed for `lease_duration` plus
    /// `max_tolerable_expired_lease` (it should have stepped down; a deadlock may keep it from
    /// it). A standby is healthy.
    pub fn check(&self, max_tolerable_expired_lease: Duration) -> Result<(), String> {
        if !self.is_leader() {
            return Ok(());
        }
        let since = self
            .inner
            .observed
            .lock()
            .time
            .map(|t| Instant::now().saturating_duration_since(t));
        match since {
            Some(since)
                if renewal_overdue(
                    since,
                    self.inner.config.lease_duration,
                    max_tolerable_expired_lease,
                ) =>
            {
                Err(format!(
                    "failed election to renew leadership on lease {}",
                    self.inner.config.lease_name
                ))
            }
            _ => Ok(()),
        }
    }

    /// The identity of the last observed leader, if any.
    pub fn leader(&self) -> Option<String> {
        self.inner
            .observed
            .lock()
            .record
            .as_ref()
            .map(|r| r.holder.clone())
            .filter(|h| !h.is_empty())
    }

    /// Campaigns until elected, runs `on_started_leading` (on its own task) with a token that is
    /// cancelled when leadership ends, renews until `shutdown` or a failed renewal, then stops the
    /// leading task, releases the lease if configured, and calls `on_stopped_leading`.
    ///
    /// As in client-go, `on_stopped_leading` is called whenever `run` returns, even if this
    /// candidate never led.
    pub async fn run<F, Fut>(
        self,
        shutdown: Shutdown,
        on_started_leading: F,
        on_stopped_leading: impl FnOnce(),
    ) where
        F: FnOnce(Shutdown) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let inner = &self.inner;
        if inner.acquire(&shutdown).await {
            let leading = shutdown.child_token();
            let task = tokio::spawn(on_started_leading(leading.clone()));
            inner.renew(&shutdown).await;
            leading.cancel();
            // Let the leading work wind down before the lease is handed over.
            if tokio::time::timeout(inner.config.renew_deadline, task)
                .await
                .is_err()
            {
                tracing::warn!(lease = %inner.describe(), "leading task did not stop within renew_deadline");
            }
            // client-go gives the lease up whenever renewing stops, after a failed renewal as
            // on shutdown; `release` does nothing once another candidate holds it.
            if inner.config.release_on_cancel {
                inner.release().await;
            }
            inner.set_leading(false);
        }
        on_stopped_leading();
    }
}

/// Whether a leader that last saw its lease renewed `since` ago is past the lease and the
/// tolerance (kube: `clock.Since(observedTime) > LeaseDuration + maxTolerableExpiredLease`).
pub fn renewal_overdue(since: Duration, lease_duration: Duration, tolerance: Duration) -> bool {
    since > lease_duration + tolerance
}

impl Inner {
    fn describe(&self) -> String {
        format!("{}/{}", self.config.lease_namespace, self.config.lease_name)
    }

    fn is_leader(&self) -> bool {
        self.observed
            .lock()
            .record
            .as_ref()
            .is_some_and(|r| r.holder == self.config.identity)
    }

    fn set_leading(&self, leading: bool) {
        self.leading.store(leading, Ordering::Release);
        master_status()
            .get_or_create(&ElectionLabels {
                name: self.config.lease_name.clone(),
            })
            .set(i64::from(leading));
    }

    /// Whether the observed record is still within its lease, by our own clock.
    fn lease_valid(&self, now: Instant) -> bool {
        let observed = self.observed.lock();
        match (&observed.record, observed.time) {
            (Some(record), Some(time)) => record.valid_at(time, now),
            _ => false,
        }
    }

    fn set_observed(&self, record: Record, lease: Option<Lease>, now: Instant) {
        let mut observed = self.observed.lock();
        observed.record = Some(record);
        observed.time = Some(now);
        if lease.is_some() {
            observed.lease = lease;
        }
    }

    /// Tries every `retry_period` (jittered) until acquired; `false` if shut down first.
    async fn acquire(&self, shutdown: &Shutdown) -> bool {
        tracing::info!(lease = %self.describe(), identity = %self.config.identity, "attempting to acquire leader lease");
        loop {
            if shutdown.is_cancelled() {
                return false;
            }
            // Not abandoned on shutdown: a lease we just took must be known, to be released.
            let attempt =
                tokio::time::timeout(self.config.renew_deadline, self.try_acquire_or_renew())
                    .await
                    .unwrap_or(false);
            if attempt && shutdown.is_cancelled() {
                if self.config.release_on_cancel {
                    self.release().await;
                }
                return false;
            }
            if attempt {
                tracing::info!(lease = %self.describe(), identity = %self.config.identity, "successfully acquired lease");
                self.set_leading(true);
                return true;
            }
            let jitter = rand::rng().random_range(0.0..1.0) * JITTER_FACTOR;
            let wait = self.config.retry_period.mul_f64(1.0 + jitter);
            tokio::select! {
                _ = shutdown.cancelled() => return false,
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Renews every `retry_period` until shutdown or until a renewal does not succeed within
    /// `renew_deadline`.
    async fn renew(&self, shutdown: &Shutdown) {
        loop {
            let deadline = Instant::now() + self.config.renew_deadline;
            let renewed = loop {
                // An attempt in flight is not abandoned on shutdown (it is bounded by the
                // deadline), so our copy of the Lease stays current for the release.
                let attempt = tokio::time::timeout_at(deadline, self.try_acquire_or_renew()).await;
                if shutdown.is_cancelled() {
                    return;
                }
                match attempt {
                    Ok(true) => break true,
                    Err(_elapsed) => break false,
                    Ok(false) => {}
                }
                let next = Instant::now() + self.config.retry_period;
                if next >= deadline {
                    break false;
                }
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep_until(next) => {}
                }
            };
            if !renewed {
                tracing::warn!(lease = %self.describe(), identity = %self.config.identity, "failed to renew lease; leadership lost");
                return;
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(self.config.retry_period) => {}
            }
        }
    }

    fn desired_record(&self) -> Record {
        let now = MicroTime(self.config.clock.now());
        Record {
            holder: self.config.identity.clone(),
            lease_duration_seconds: i32::try_from(self.config.lease_duration.as_secs())
                .unwrap_or(i32::MAX),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            transitions: 0,
        }
    }

    /// One acquire-or-renew attempt (client-go `tryAcquireOrRenew`).
    async fn try_acquire_or_renew(&self) -> bool {
        let mut record = self.desired_record();
        let now = Instant::now();

        // Fast path: the leader updates optimistically from the record it last wrote.
        if self.is_leader() && self.lease_valid(now) {
            let base = self.observed.lock().record.clone();
            if let Some(base) = base {
                record.acquire_time = base.acquire_time;
                record.transitions = base.transitions;
                if self.update(&record).await.is_ok() {
                    return true;
                }
            }
        }

        // Slow path: read the current record.
        let current = match self.inner_get().await {
            Ok(current) => current,
            Err(err) => {
                tracing::warn!(lease = %self.describe(), error = %crate::api_error::message(&err), "error retrieving lease");
                return false;
            }
        };
        let Some(lease) = current else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.config.lease_name.clone()),
                    namespace: Some(self.config.lease_namespace.clone()),
                    ..Default::default()
                },
                spec: Some(record.to_spec(None)),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(created) => {
                    self.set_observed(record, Some(created), Instant::now());
                    true
                }
                Err(err) => {
                    tracing::debug!(lease = %self.describe(), error = %crate::api_error::message(&err), "error creating lease");
                    false
                }
            };
        };

        let old = Record::from_spec(lease.spec.as_ref());
        {
            let mut observed = self.observed.lock();
            if observed.record.as_ref() != Some(&old) {
                observed.record = Some(old.clone());
                observed.time = Some(now);
            }
            observed.lease = Some(lease);
        }
        if !old.holder.is_empty() && self.lease_valid(now) && !self.is_leader() {
            tracing::trace!(lease = %self.describe(), holder = %old.holder, "lease is held by another candidate");
            return false;
        }
        if self.is_leader() {
            record.acquire_time = old.acquire_time;
            record.transitions = old.transitions;
        } else {
            record.transitions = old.transitions + 1;
        }
        match self.update(&record).await {
            Ok(()) => true,
            Err(err) => {
                tracing::debug!(lease = %self.describe(), error = %crate::api_error::message(&err), "failed to update lease");
                false
            }
        }
    }

    async fn inner_get(&self) -> Result<Option<Lease>, kube::Error> {
        self.api.get_opt(&self.config.lease_name).await
    }

    /// Writes `record` over the last read Lease (its resourceVersion guards the write).
    async fn update(&self, record: &Record) -> Result<(), kube::Error> {
        let Some(mut lease) = self.observed.lock().lease.clone() else {
            return Err(kube::Error::Api(
                kube::core::Status::failure("lease not initialized", "NotFound")
                    .with_code(404)
                    .boxed(),
            ));
        };
        lease.spec = Some(record.to_spec(lease.spec.as_ref()));
        let written = self
            .api
            .replace(&self.config.lease_name, &PostParams::default(), &lease)
            .await?;
        self.set_observed(record.clone(), Some(written), Instant::now());
        Ok(())
    }

    /// Gives the lease up: no holder, a one-second duration (client-go `release`).
    async fn release(&self) {
        if !self.is_leader() {
            return;
        }
        let now = MicroTime(self.config.clock.now());
        let transitions = self
            .observed
            .lock()
            .record
            .as_ref()
            .map(|r| r.transitions)
            .unwrap_or_default();
        let record = Record {
            holder: String::new(),
            lease_duration_seconds: 1,
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            transitions,
        };
        let mut result = self.update(&record).await;
        // A renewal cut short by the shutdown may have reached the server after all, leaving our
        // copy one resourceVersion behind: re-read, and release if the lease is still ours.
        if matches!(&result, Err(kube::Error::Api(s)) if s.code == 409) {
            result = match self.inner_get().await {
                Ok(Some(lease))
                    if Record::from_spec(lease.spec.as_ref()).holder == self.config.identity =>
                {
                    self.observed.lock().lease = Some(lease);
                    self.update(&record).await
                }
                Ok(_) => {
                    tracing::debug!(lease = %self.describe(), "lease already held by another candidate; nothing to release");
                    return;
                }
                Err(err) => Err(err),
            };
        }
        match result {
            Ok(()) => tracing::info!(lease = %self.describe(), "released leader lease"),
            Err(err) => {
                tracing::warn!(lease = %self.describe(), error = %crate::api_error::message(&err), "failed to release lease")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_leader_is_unhealthy_once_the_lease_is_overdue_beyond_the_tolerance() {
        let (lease, tolerance) = (Duration::from_secs(15), Duration::from_secs(20));
        assert!(!renewal_overdue(Duration::from_secs(2), lease, tolerance));
        assert!(!renewal_overdue(Duration::from_secs(35), lease, tolerance));
        assert!(renewal_overdue(
            Duration::from_millis(35_001),
            lease,
            tolerance
        ));
    }

    use super::*;

    #[test]
    fn config_defaults_are_kube_controller_managers_and_validation_matches_client_go() {
        let c = LeaderElectionConfig::new("kube-system", "kube-controller-manager", "me");
        assert_eq!(c.lease_duration, Duration::from_secs(15));
        assert_eq!(c.renew_deadline, Duration::from_secs(10));
        assert_eq!(c.retry_period, Duration::from_secs(2));
        assert!(c.release_on_cancel);
        assert!(c.validate().is_ok());

        let mut bad = c.clone();
        bad.renew_deadline = Duration::from_secs(15);
        assert!(bad.validate().is_err());
        let mut bad = c.clone();
        bad.retry_period = Duration::from_secs(9);
        assert!(bad.validate().is_err(), "10s is not > 1.2 × 9s");
        let mut bad = c;
        bad.identity.clear();
        assert!(bad.validate().is_err());
    }

    #[test]
    fn a_lease_is_valid_for_the_duration_its_holder_wrote() {
        let record = |secs| Record {
            holder: "other".into(),
            lease_duration_seconds: secs,
            acquire_time: None,
            renew_time: None,
            transitions: 0,
        };
        let seen = Instant::now();
        // A holder with a 60 s lease is still leading after our own 15 s would have run out.
        assert!(record(60).valid_at(seen, seen + Duration::from_secs(59)));
        assert!(!record(60).valid_at(seen, seen + Duration::from_secs(60)));
        // A holder with a 5 s lease is taken over after 5 s, not 15.
        assert!(!record(5).valid_at(seen, seen + Duration::from_secs(5)));
        // A released lease (1 s) or a nonsensical one expires at once.
        assert!(!record(1).valid_at(seen, seen + Duration::from_secs(1)));
        assert!(!record(-3).valid_at(seen, seen));
    }

    #[test]
    fn records_round_trip_through_the_lease_spec_keeping_unmanaged_fields() {
        let now = MicroTime(jiff::Timestamp::from_second(1_700_000_000).expect("valid"));
        let r = Record {
            holder: "a".into(),
            lease_duration_seconds: 15,
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            transitions: 3,
        };
        let base = LeaseSpec {
            strategy: Some("OldestEmulationVersion".into()),
            ..Default::default()
        };
        let spec = r.to_spec(Some(&base));
        assert_eq!(spec.strategy.as_deref(), Some("OldestEmulationVersion"));
        assert_eq!(Record::from_spec(Some(&spec)), r);
        assert_eq!(Record::from_spec(None).holder, "");
    }
}
