//! The legacy service-account token cleaner: auto-generated token Secrets unused for a clean-up
//! period are labelled invalid, then deleted one period later.
//!
//! Mirrors `pkg/controller/serviceaccount/legacy_serviceaccount_token_cleaner.go`. Once a day
//! (`DefaultCleanerSyncInterval`) and only when the API server has tracked legacy token use for
//! at least one period (the `since` date of the ConfigMap
//! `kube-system/kube-apiserver-legacy-service-account-token-tracking`), every
//! `kubernetes.io/service-account-token` Secret that is older than the period, not used within it
//! (label `kubernetes.io/legacy-token-last-used`), referenced by its ServiceAccount's `secrets`
//! and mounted by no pod gets `kubernetes.io/legacy-token-invalid-since: <today>`; one whose
//! invalid-since date is a period old is deleted (with its resourceVersion as precondition).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use jiff::civil::Date;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, ServiceAccount};
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use rkcm_runtime::informer::{wait_for_cache_sync, HasSynced, InformerFactory, SharedInformer};
use rkcm_runtime::{api_error, Clock, ObjectKey, Shutdown};
use serde_json::json;

use super::pod_secrets::pod_secret_names;

/// Canonical name of the controller.
pub const NAME: &str = "legacy-serviceaccount-token-cleaner-controller";
/// `--legacy-service-account-token-clean-up-period`'s default: one year.
pub const DEFAULT_CLEAN_UP_PERIOD: Duration = Duration::from_secs(365 * 24 * 3600);
/// `DefaultCleanerSyncInterval`.
pub const DEFAULT_SYNC_INTERVAL: Duration = Duration::from_secs(24 * 3600);
/// `serviceaccount.LastUsedLabelKey`.
pub const LAST_USED_LABEL_KEY: &str = "kubernetes.io/legacy-token-last-used";
/// `serviceaccount.InvalidSinceLabelKey`.
pub const INVALID_SINCE_LABEL_KEY: &str = "kubernetes.io/legacy-token-invalid-since";
/// `legacytokentracking.ConfigMapName`.
pub const TRACKING_CONFIG_MAP: &str = "kube-apiserver-legacy-service-account-token-tracking";
/// `legacytokentracking.ConfigMapDataKey`.
pub const TRACKING_CONFIG_MAP_KEY: &str = "since";

const SERVICE_ACCOUNT_TOKEN: &str = "kubernetes.io/service-account-token";
const SERVICE_ACCOUNT_NAME_KEY: &str = "kubernetes.io/service-account.name";
const SERVICE_ACCOUNT_UID_KEY: &str = "kubernetes.io/service-account.uid";

/// Settings of the cleaner.
#[derive(Clone)]
pub struct Config {
    /// `--legacy-service-account-token-clean-up-period`.
    pub clean_up_period: Duration,
    /// How often every token is evaluated.
    pub sync_interval: Duration,
    /// Wall clock.
    pub clock: Arc<dyn Clock>,
}

/// The cleaner cannot start with a period or interval of zero (`NewLegacySATokenCleaner`).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// `CleanUpPeriod` is not positive.
    #[error("invalid CleanUpPeriod: {}", rkcm_apimachinery::duration::format_std(*.0))]
    CleanUpPeriod(Duration),
    /// `SyncInterval` is not positive.
    #[error("invalid SyncInterval: {}", rkcm_apimachinery::duration::format_std(*.0))]
    SyncInterval(Duration),
}

/// What to do with one token Secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Leave it.
    Keep,
    /// Label it invalid since `date`.
    MarkInvalid {
        /// Today, `2006-01-02`.
        date: String,
    },
    /// Delete it: invalid since `invalid_since`, more than a period ago.
    Delete {
        /// The label's date.
        invalid_since: String,
    },
}

/// Parses a `2006-01-02` date as Go's `time.Parse` with that layout does (exact width).
fn parse_date(s: &str) -> Option<Date> {
    let b = s.as_bytes();
    let shape = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
    if !shape {
        return None;
    }
    s.parse().ok()
}

/// The UTC date of `t`, as `2006-01-02`.
fn date_of(t: Timestamp) -> String {
    t.to_zoned(jiff::tz::TimeZone::UTC).date().to_string()
}

fn minus(now: Timestamp, period: Duration) -> Timestamp {
    jiff::SignedDuration::try_from(period)
        .ok()
        .and_then(|d| now.checked_sub(d).ok())
        .unwrap_or(Timestamp::MIN)
}

/// Whether the API server has tracked legacy token use long enough (`latestPossibleTrackedSince`
/// plus the period): `since` is the tracking ConfigMap's date; tracking counts from the day after.
pub fn tracked_long_enough(since: Option<&str>, now: Timestamp, period: Duration) -> bool {
    let Some(date) = since.and_then(parse_date) else {
        return false;
    };
    let Some(day_after) = date
        .tomorrow()
        .ok()
        .and_then(|d| d.to_zoned(jiff::tz::TimeZone::UTC).ok())
    else {
        return false;
    };
    minus(now, period) >= day_after.timestamp()
}

/// The ServiceAccount a token Secret belongs to (`getServiceAccount`): named by its annotation,
/// with the annotated UID when there is one.
pub fn owning_account<'a>(
    secret: &Secret,
    lookup: impl FnOnce(&str) -> Option<&'a ServiceAccount>,
) -> Option<&'a ServiceAccount> {
    let annotations = secret.metadata.annotations.as_ref();
    let name = annotations
        .and_then(|a| a.get(SERVICE_ACCOUNT_NAME_KEY))
        .filter(|n| !n.is_empty())?;
    let uid = annotations
        .and_then(|a| a.get(SERVICE_ACCOUNT_UID_KEY))
        .map(String::as_str)
        .unwrap_or("");
    let sa = lookup(name)?;
    (uid.is_empty() || sa.metadata.uid.as_deref() == Some(uid)).then_some(sa)
}

/// The decision of `evaluateSATokens` for one Secret at `now`. `account` is its ServiceAccount
/// ([`owning_account`]); `mounted` says whether a pod of its namespace uses it (asked last, as
/// kube lists pods only when needed).
pub fn decide(
    secret: &Secret,
    account: Option<&ServiceAccount>,
    mounted: impl FnOnce() -> bool,
    now: Timestamp,
    period: Duration,
) -> Decision {
    if secret.type_.as_deref() != Some(SERVICE_ACCOUNT_TOKEN) {
        return Decision::Keep;
    }
    let preserve_created_on_or_after = minus(now, period);
    let created = secret
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or(Timestamp::UNIX_EPOCH, |t| t.0);
    if created >= preserve_created_on_or_after {
        return Decision::Keep;
    }
    if secret.metadata.deletion_timestamp.is_some() {
        return Decision::Keep;
    }
    let preserve_used_on_or_after = date_of(preserve_created_on_or_after);
    let labels = secret.metadata.labels.clone().unwrap_or_default();
    if let Some(last_used) = labels.get(LAST_USED_LABEL_KEY) {
        if parse_date(last_used).is_none() {
            tracing::error!(
                secret = %ObjectKey::from_obj(secret),
                "Parsing lastUsed time: cannot parse {last_used:?} as \"2006-01-02\""
            );
            return Decision::Keep;
        }
        if *last_used >= preserve_used_on_or_after {
            return Decision::Keep;
        }
    }
    let name = secret.metadata.name.as_deref().unwrap_or("");
    let referenced = account.is_some_and(|sa| {
        sa.secrets
            .iter()
            .flatten()
            .any(|r| r.name.as_deref() == Some(name))
    });
    if !referenced {
        // Cannot tell whether it is an auto-generated token.
        return Decision::Keep;
    }
    if mounted() {
        return Decision::Keep;
    }
    match labels
        .get(INVALID_SINCE_LABEL_KEY)
        .filter(|d| parse_date(d).is_some())
    {
        None => Decision::MarkInvalid { date: date_of(now) },
        Some(invalid_since) if *invalid_since >= preserve_used_on_or_after => Decision::Keep,
        Some(invalid_since) => Decision::Delete {
            invalid_since: invalid_since.clone(),
        },
    }
}

/// Labels and deletes unused legacy service-account tokens.
pub struct LegacyTokenCleaner {
    client: kube::Client,
    config: Config,
    service_accounts: SharedInformer<ServiceAccount>,
    secrets: SharedInformer<Secret>,
    pods: SharedInformer<Pod>,
}

impl LegacyTokenCleaner {
    /// Registers the ServiceAccount, Secret and Pod informers the cleaner reads.
    pub fn new(
        factory: &InformerFactory,
        client: kube::Client,
        config: Config,
    ) -> Result<Arc<Self>, ConfigError> {
        if config.clean_up_period.is_zero() {
            return Err(ConfigError::CleanUpPeriod(config.clean_up_period));
        }
        if config.sync_interval.is_zero() {
            return Err(ConfigError::SyncInterval(config.sync_interval));
        }
        Ok(Arc::new(Self {
            client,
            config,
            service_accounts: factory.informer::<ServiceAccount>(),
            secrets: factory.informer::<Secret>(),
            pods: factory.informer::<Pod>(),
        }))
    }

    /// Evaluates every token now, then every sync interval, until `shutdown`.
    pub async fn run(self: Arc<Self>, shutdown: Shutdown) {
        tracing::info!(controller = NAME, "Starting controller");
        let synced: [&dyn HasSynced; 3] = [&self.service_accounts, &self.secrets, &self.pods];
        if wait_for_cache_sync(NAME, &synced, &shutdown).await {
            let mut tick = tokio::time::interval(self.config.sync_interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = tick.tick() => self.evaluate_tokens().await,
                }
            }
        }
        tracing::info!(controller = NAME, "Shutting down controller");
    }

    /// One pass over every token Secret (`evaluateSATokens`).
    pub async fn evaluate_tokens(&self) {
        let now = self.config.clock.now();
        let period = self.config.clean_up_period;
        let cm_api: Api<ConfigMap> = Api::namespaced(self.client.clone(), "kube-system");
        let since = match cm_api.get(TRACKING_CONFIG_MAP).await {
            Ok(cm) => cm
                .data
                .and_then(|d| d.get(TRACKING_CONFIG_MAP_KEY).cloned()),
            Err(err) => {
                tracing::error!(error = %err, "Getting lastest possible tracked_since time");
                return;
            }
        };
        if !tracked_long_enough(since.as_deref(), now, period) {
            // Not tracking long enough, or the ConfigMap has no valid date.
            return;
        }
        let accounts = self.service_accounts.store();
        let pods = self.pods.store();
        let mut mounted_by_namespace: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for secret in self.secrets.store().list() {
            let ns = secret.metadata.namespace.clone().unwrap_or_default();
            let name = secret.metadata.name.clone().unwrap_or_default();
            let sa_name = secret
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(SERVICE_ACCOUNT_NAME_KEY))
                .cloned()
                .unwrap_or_default();
            let account = accounts.get(&ObjectKey::new(&ns, &sa_name));
            let account = owning_account(&secret, |_| account.as_deref());
            let decision = decide(
                &secret,
                account,
                || {
                    mounted_by_namespace
                        .entry(ns.clone())
                        .or_insert_with(|| {
                            pods.list_by_namespace(&ns)
                                .iter()
                                .flat_map(|p| pod_secret_names(p))
                                .collect()
                        })
                        .contains(&name)
                },
                now,
                period,
            );
            let api: Api<Secret> = Api::namespaced(self.client.clone(), &ns);
            match decision {
                Decision::Keep => {}
                Decision::MarkInvalid { date } => {
                    tracing::info!(
                        invalid_since = %date,
                        secret = %ObjectKey::from_obj(&*secret),
                        "Mark the auto-generated service account token as invalid"
                    );
                    let patch = json!({
                        "kind": "Secret",
                        "apiVersion": "v1",
                        "metadata": {
                            "name": name,
                            "namespace": ns,
                            "uid": secret.metadata.uid,
                            "labels": {INVALID_SINCE_LABEL_KEY: date},
                        },
                    });
                    if let Err(err) = api
                        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                    {
                        tracing::error!(error = %err, "Failed to label legacy service account token secret with invalid since date");
                    }
                }
                Decision::Delete { invalid_since } => {
                    tracing::info!(
                        secret = %ObjectKey::from_obj(&*secret),
                        invalid_since = %invalid_since,
                        "Delete auto-generated service account token"
                    );
                    let params = DeleteParams {
                        preconditions: Some(Preconditions {
                            resource_version: secret.metadata.resource_version.clone(),
                            uid: None,
                        }),
                        ..DeleteParams::default()
                    };
                    match api.delete(&name, &params).await {
                        Ok(_) => {}
                        Err(e) if api_error::is_conflict(&e) || api_error::is_not_found(&e) => {}
                        Err(err) => tracing::error!(
                            error = %err,
                            secret = %ObjectKey::from_obj(&*secret),
                            serviceaccount = sa_name,
                            "Deleting legacy service account token"
                        ),
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ObjectReference;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    // kube's cases compute the period as now − a start date; here now is fixed.
    const NOW: &str = "2023-01-05T10:00:00Z";

    fn now() -> Timestamp {
        NOW.parse().expect("a timestamp")
    }

    /// The period that makes `now − period` fall on `start` at 00:00 UTC
    /// (`configuredLegacyTokenCleanUpPeriod`).
    fn period_since(start: &str) -> Duration {
        let start: Timestamp = format!("{start}T00:00:00Z").parse().expect("a date");
        Duration::from_secs((now().as_second() - start.as_second()) as u64)
    }

    fn at(date: &str) -> Time {
        Time(format!("{date}T00:00:00Z").parse().expect("a date"))
    }

    /// `configuredServiceAccountTokenSecret`.
    fn secret(
        last_used: &str,
        invalid_since: &str,
        created: &str,
        sa: &str,
        sa_uid: &str,
    ) -> Secret {
        let mut labels = BTreeMap::new();
        if !last_used.is_empty() {
            labels.insert(LAST_USED_LABEL_KEY.to_string(), last_used.to_string());
        }
        if !invalid_since.is_empty() {
            labels.insert(
                INVALID_SINCE_LABEL_KEY.to_string(),
                invalid_since.to_string(),
            );
        }
        let mut s = Secret::default();
        s.metadata.name = Some("token-secret-1".into());
        s.metadata.namespace = Some("default".into());
        s.metadata.uid = Some("23456".into());
        s.metadata.labels = Some(labels);
        s.metadata.creation_timestamp = Some(at(created));
        s.metadata.annotations = Some(BTreeMap::from([
            (SERVICE_ACCOUNT_NAME_KEY.to_string(), sa.to_string()),
            (SERVICE_ACCOUNT_UID_KEY.to_string(), sa_uid.to_string()),
        ]));
        s.type_ = Some(SERVICE_ACCOUNT_TOKEN.into());
        s
    }

    fn account(references: &[&str]) -> ServiceAccount {
        let mut sa = ServiceAccount::default();
        sa.metadata.name = Some("default".into());
        sa.metadata.namespace = Some("default".into());
        sa.metadata.uid = Some("12345".into());
        sa.secrets = Some(
            references
                .iter()
                .map(|n| ObjectReference {
                    name: Some(n.to_string()),
                    ..Default::default()
                })
                .collect(),
        );
        sa
    }

    fn decision(
        secret: &Secret,
        sa: Option<&ServiceAccount>,
        mounted: bool,
        start: &str,
    ) -> Decision {
        let account = owning_account(secret, |name| {
            sa.filter(|s| s.metadata.name.as_deref() == Some(name))
        });
        decide(secret, account, || mounted, now(), period_since(start))
    }

    fn mark() -> Decision {
        Decision::MarkInvalid {
            date: "2023-01-05".into(),
        }
    }

    // The ConfigMap cases of TestLegacyServiceAccountTokenCleanUp.
    #[test]
    fn nothing_is_judged_before_tracking_has_lasted_a_period() {
        assert!(!tracked_long_enough(
            None,
            now(),
            period_since("2022-12-28")
        ));
        assert!(!tracked_long_enough(
            Some("2022-12-29"),
            now(),
            period_since("2022-12-29")
        ));
        assert!(!tracked_long_enough(
            Some("2022-12-27-1"),
            now(),
            period_since("2022-12-29")
        ));
        // Tracking counts from the day after the ConfigMap's date.
        assert!(tracked_long_enough(
            Some("2022-12-28"),
            now(),
            period_since("2022-12-29")
        ));
        assert!(!tracked_long_enough(
            Some("2022-12-28"),
            now(),
            period_since("2022-12-28")
        ));
    }

    // The secret cases of TestLegacyServiceAccountTokenCleanUp.
    #[test]
    fn tokens_that_may_be_in_use_are_kept() {
        let sa = account(&["token-secret-1"]);
        let mut opaque = secret("2022-12-27", "", "2022-12-27", "default", "12345");
        opaque.type_ = Some("Opaque".into());
        assert_eq!(
            decision(&opaque, Some(&sa), false, "2022-12-29"),
            Decision::Keep
        );
        let unreferenced = account(&[]);
        let token = secret("2022-12-27", "", "2022-12-27", "default", "12345");
        assert_eq!(
            decision(&token, Some(&unreferenced), false, "2022-12-29"),
            Decision::Keep,
            "not referenced"
        );
        let late = secret("2022-12-27", "", "2022-12-30", "default", "12345");
        assert_eq!(
            decision(&late, Some(&sa), false, "2022-12-29"),
            Decision::Keep,
            "late creation"
        );
        let mut deleting = secret("2022-12-27", "", "2022-12-27", "default", "12345");
        deleting.metadata.deletion_timestamp = Some(Time(now()));
        assert_eq!(
            decision(&deleting, Some(&sa), false, "2022-12-30"),
            Decision::Keep,
            "deleting"
        );
        let recently_used = secret("2022-12-30", "", "2022-12-27", "default", "12345");
        assert_eq!(
            decision(&recently_used, Some(&sa), false, "2022-12-29"),
            Decision::Keep,
            "late last-used"
        );
        let bad_label = secret("2022-12-27-1", "", "2022-12-27", "default", "12345");
        assert_eq!(
            decision(&bad_label, Some(&sa), false, "2022-12-29"),
            Decision::Keep,
            "unparsable last-used"
        );
        assert_eq!(
            decision(&token, None, false, "2022-12-29"),
            Decision::Keep,
            "no account"
        );
        let other_uid = secret("2022-12-27", "", "2022-12-27", "default", "123456");
        assert_eq!(
            decision(&other_uid, Some(&sa), false, "2022-12-29"),
            Decision::Keep,
            "uid mismatch"
        );
        let no_name = secret("2022-12-27", "", "2022-12-27", "", "12345");
        assert_eq!(
            decision(&no_name, Some(&sa), false, "2022-12-29"),
            Decision::Keep,
            "empty name"
        );
        assert_eq!(
            decision(&token, Some(&sa), true, "2022-12-29"),
            Decision::Keep,
            "mounted by a pod"
        );
    }

    #[test]
    fn unused_tokens_are_marked_invalid_with_todays_date() {
        let sa = account(&["token-secret-1"]);
        let never_used = secret("", "", "2022-12-27", "default", "12345");
        assert_eq!(
            decision(&never_used, Some(&sa), false, "2022-12-30"),
            mark()
        );
        let bad_invalid_since = secret("", "2022-12-29-1", "2022-12-27", "default", "12345");
        assert_eq!(
            decision(&bad_invalid_since, Some(&sa), false, "2022-12-30"),
            mark()
        );
        let used_long_ago = secret("2022-12-27", "", "2022-12-27", "default", "12345");
        assert_eq!(
            decision(&used_long_ago, Some(&sa), false, "2022-12-29"),
            mark()
        );
        // Without a UID annotation the name alone identifies the account.
        let no_uid = secret("", "", "2022-12-27", "default", "");
        assert_eq!(decision(&no_uid, Some(&sa), false, "2022-12-30"), mark());
    }

    #[test]
    fn tokens_invalid_for_a_period_are_deleted() {
        let sa = account(&["token-secret-1"]);
        let recently_invalid = secret("", "2023-01-01", "2022-12-27", "default", "12345");
        assert_eq!(
            decision(&recently_invalid, Some(&sa), false, "2022-12-29"),
            Decision::Keep
        );
        let long_invalid = secret("", "2022-12-29", "2022-12-27", "default", "12345");
        assert_eq!(
            decision(&long_invalid, Some(&sa), false, "2023-01-01"),
            Decision::Delete {
                invalid_since: "2022-12-29".into()
            }
        );
        let used_then_invalid =
            secret("2022-12-27", "2022-12-28", "2022-12-27", "default", "12345");
        assert_eq!(
            decision(&used_then_invalid, Some(&sa), false, "2022-12-30"),
            Decision::Delete {
                invalid_since: "2022-12-28".into()
            }
        );
    }

    #[test]
    fn dates_are_parsed_with_gos_exact_layout() {
        assert!(parse_date("2022-12-27").is_some());
        for bad in [
            "2022-12-27-1",
            "2022-1-27",
            "22-12-27",
            "2022-13-01",
            "",
            "2022/12/27",
        ] {
            assert!(parse_date(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn a_zero_period_or_interval_is_refused() {
        assert_eq!(
            ConfigError::CleanUpPeriod(Duration::ZERO).to_string(),
            "invalid CleanUpPeriod: 0s"
        );
    }
}
