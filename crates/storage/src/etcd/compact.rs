//! Periodic compaction of etcd's history, as kube-apiserver's `etcd3/compact.go`.
//!
//! Every interval, each API server tries to bump the version of the key `compact_rev_key` from
//! the version it last saw, storing the revision it saw one interval ago. The one that succeeds
//! compacts to that revision; the others learn the new version and try again next interval. So
//! however many API servers share an etcd, history is compacted about once an interval, and
//! always keeps at least one interval of it.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::client::{self, Client};
use rkcm_etcd_api::etcdserverpb::compare::{CompareResult, TargetUnion};
use rkcm_etcd_api::etcdserverpb::TxnRequest;

/// The key the API servers sharing an etcd coordinate through (kube's `compactRevKey`; outside
/// `--etcd-prefix`, as kube's).
pub const COMPACT_REV_KEY: &str = "compact_rev_key";

/// Compacts every `interval` until `stop`.
pub(super) async fn run(client: Client, interval: Duration, stop: CancellationToken) {
    let mut version = 0;
    let mut revision = 0;
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(interval) => {}
        }
        match compact(&client, version, revision).await {
            Ok((v, r)) => (version, revision) = (v, r),
            Err(e) => tracing::warn!(error = %client.error(e), "compacting etcd failed"),
        }
    }
}

/// One round: returns the compaction key's version and the current revision.
async fn compact(
    client: &Client,
    expect_version: i64,
    revision: i64,
) -> Result<(i64, i64), tonic::Status> {
    let resp = client
        .txn(TxnRequest {
            compare: vec![client::compare(
                COMPACT_REV_KEY,
                CompareResult::Equal,
                TargetUnion::Version(expect_version),
            )],
            success: vec![client::put(
                COMPACT_REV_KEY,
                revision.to_string().into(),
                false,
            )],
            failure: vec![client::get(COMPACT_REV_KEY)],
        })
        .await?;
    let current = resp.header.map(|h| h.revision).unwrap_or(revision);
    if !resp.succeeded {
        // Another API server compacted in this interval; adopt its version.
        let version = client::txn_got(&resp.responses)
            .map(|kv| kv.version)
            .unwrap_or(expect_version);
        return Ok((version, current));
    }
    if revision == 0 {
        // Nothing is compacted on the first round (kube: "We don't compact on bootstrap").
        return Ok((expect_version + 1, current));
    }
    client.compact(revision).await?;
    tracing::info!(revision, "compacted etcd");
    Ok((expect_version + 1, current))
}
