//! A thin etcd v3 client on tonic: one gRPC channel balanced over the `--etcd-servers`, the KV
//! and Watch services of the generated API ([`super::api`]), and the few request shapes the
//! storage sends (ranges, transactions comparing a key's revision, prefix watches, compaction).

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

use super::EtcdConfig;
use crate::{Error, Result};
use rkcm_etcd_api::etcdserverpb::{
    compare, kv_client::KvClient, request_op, response_op, watch_client::WatchClient,
    watch_request, CompactionRequest, Compare, DeleteRangeRequest, PutRequest, RangeRequest,
    RangeResponse, RequestOp, ResponseOp, TxnRequest, TxnResponse, WatchCreateRequest,
    WatchRequest, WatchResponse,
};
use rkcm_etcd_api::mvccpb::KeyValue;

/// Largest gRPC message accepted: a page of large objects (etcd's own limit is 1.5 MiB a value).
const MAX_MESSAGE: usize = 64 * 1024 * 1024;

/// A connection to an etcd cluster; cheap to clone.
#[derive(Clone)]
pub(super) struct Client {
    kv: KvClient<Channel>,
    watch: WatchClient<Channel>,
    servers: String,
    endpoints: usize,
}

fn read(path: &Path, what: &str) -> Result<Vec<u8>> {
    std::fs::read(path)
        .map_err(|e| Error::Backend(format!("reading {what} {}: {e}", path.display())))
}

/// The TLS settings of `config`, when it asks for TLS (an `https://` server or any TLS file).
fn tls_config(config: &EtcdConfig) -> Result<Option<ClientTlsConfig>> {
    let https = config.servers.iter().any(|s| s.starts_with("https://"));
    if !https && config.ca_file.is_none() && config.cert_file.is_none() {
        return Ok(None);
    }
    let mut tls = ClientTlsConfig::new();
    if let Some(ca) = &config.ca_file {
        tls = tls.ca_certificate(Certificate::from_pem(read(ca, "--etcd-cafile")?));
    }
    match (&config.cert_file, &config.key_file) {
        (Some(cert), Some(key)) => {
            tls = tls.identity(Identity::from_pem(
                read(cert, "--etcd-certfile")?,
                read(key, "--etcd-keyfile")?,
            ));
        }
        (None, None) => {}
        _ => {
            return Err(Error::Backend(
                "--etcd-certfile and --etcd-keyfile go together".into(),
            ))
        }
    }
    Ok(Some(tls))
}

impl Client {
    /// A client of `config.servers`. Connects lazily: an unreachable cluster fails the first
    /// call, not this one, and a member that goes away is left out until it answers again.
    pub(super) fn new(config: &EtcdConfig) -> Result<Self> {
        let tls = tls_config(config)?;
        let mut endpoints = Vec::with_capacity(config.servers.len());
        for server in &config.servers {
            let mut endpoint = Endpoint::from_shared(server.clone())
                .map_err(|e| Error::Backend(format!("--etcd-servers {server}: {e}")))?
                .connect_timeout(config.request_timeout.min(Duration::from_secs(5)))
                .http2_keep_alive_interval(Duration::from_secs(10))
                .keep_alive_timeout(Duration::from_secs(5))
                .keep_alive_while_idle(true);
            if let Some(tls) = &tls {
                endpoint = endpoint
                    .tls_config(tls.clone())
                    .map_err(|e| Error::Backend(format!("TLS to etcd at {server}: {e}")))?;
            }
            endpoints.push(endpoint);
        }
        let channel = Channel::balance_list(endpoints.into_iter());
        Ok(Self {
            kv: KvClient::new(channel.clone()).max_decoding_message_size(MAX_MESSAGE),
            watch: WatchClient::new(channel).max_decoding_message_size(MAX_MESSAGE),
            servers: config.servers.join(","),
            endpoints: config.servers.len(),
        })
    }

    /// Maps a gRPC status: an unreachable cluster is [`Error::Unavailable`], a deadline
    /// [`Error::Timeout`].
    pub(super) fn error(&self, status: tonic::Status) -> Error {
        let cause = with_causes(
            status.message().to_string(),
            std::error::Error::source(&status),
        );
        let message = format!("etcd at {}: {cause}", self.servers);
        match status.code() {
            tonic::Code::Unavailable | tonic::Code::Cancelled | tonic::Code::Unknown => {
                Error::Unavailable(message)
            }
            tonic::Code::DeadlineExceeded => Error::Timeout(message),
            _ => Error::Backend(message),
        }
    }

    /// How many servers the client balances over.
    pub(super) fn endpoints(&self) -> usize {
        self.endpoints
    }

    /// The `--etcd-servers` as given, comma-separated (for messages).
    pub(super) fn servers(&self) -> &str {
        &self.servers
    }

    /// Up to `limit` keys in `[key, range_end)` at `revision` (0: the current one).
    pub(super) async fn range(
        &self,
        key: impl Into<Bytes>,
        range_end: impl Into<Bytes>,
        revision: i64,
        limit: i64,
    ) -> std::result::Result<RangeResponse, tonic::Status> {
        let request = RangeRequest {
            key: key.into(),
            range_end: range_end.into(),
            revision,
            limit,
            ..Default::default()
        };
        Ok(self.kv.clone().range(request).await?.into_inner())
    }

    pub(super) async fn txn(
        &self,
        txn: TxnRequest,
    ) -> std::result::Result<TxnResponse, tonic::Status> {
        Ok(self.kv.clone().txn(txn).await?.into_inner())
    }

    /// Compacts history up to `revision`.
    pub(super) async fn compact(&self, revision: i64) -> std::result::Result<(), tonic::Status> {
        self.kv
            .clone()
            .compact(CompactionRequest {
                revision,
                physical: false,
            })
            .await?;
        Ok(())
    }

    /// Watches every key under `prefix` from `start_revision` (inclusive); the stream ends when
    /// etcd ends it or the connection fails.
    pub(super) async fn watch_prefix(
        &self,
        prefix: &str,
        start_revision: i64,
    ) -> std::result::Result<tonic::Streaming<WatchResponse>, tonic::Status> {
        let create = WatchRequest {
            request_union: Some(watch_request::RequestUnion::CreateRequest(
                WatchCreateRequest {
                    key: Bytes::copy_from_slice(prefix.as_bytes()),
                    range_end: range_end(prefix.as_bytes()).into(),
                    start_revision,
                    ..Default::default()
                },
            )),
        };
        // The request stream stays open (never ends) for as long as the watch runs: closing it
        // would end the gRPC call.
        let requests = futures::stream::iter([create]).chain(futures::stream::pending());
        Ok(self.watch.clone().watch(requests).await?.into_inner())
    }
}

/// Whether a failed call never reached etcd: the connection to the member it was sent to was
/// refused, so sending it again cannot apply it twice.
pub(super) fn not_sent(status: &tonic::Status) -> bool {
    if status.code() != tonic::Code::Unavailable {
        return false;
    }
    let mut source = std::error::Error::source(status);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::ConnectionRefused {
                return true;
            }
        }
        source = e.source();
    }
    false
}

/// `message` followed by the causes from `source` that add something, `: `-separated
/// ("tcp connect error: Connection refused (os error 111)").
fn with_causes(message: String, mut source: Option<&(dyn std::error::Error + 'static)>) -> String {
    let mut out = message;
    while let Some(e) = source {
        let s = e.to_string();
        // tonic wraps causes in "transport error", which says nothing more.
        if !out.contains(&s) && s != "transport error" {
            out.push_str(": ");
            out.push_str(&s);
        }
        source = e.source();
    }
    out
}

/// The first key after every key that starts with `prefix` (etcd's `GetPrefixRangeEnd`).
pub(super) fn range_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// `key`'s `target` compared with `value` (etcd's `clientv3.Compare`).
pub(super) fn compare(
    key: &str,
    result: compare::CompareResult,
    target: compare::TargetUnion,
) -> Compare {
    let target_kind = match target {
        compare::TargetUnion::Version(_) => compare::CompareTarget::Version,
        compare::TargetUnion::CreateRevision(_) => compare::CompareTarget::Create,
        compare::TargetUnion::ModRevision(_) => compare::CompareTarget::Mod,
        compare::TargetUnion::Value(_) => compare::CompareTarget::Value,
        compare::TargetUnion::Lease(_) => compare::CompareTarget::Lease,
    };
    Compare {
        result: result as i32,
        target: target_kind as i32,
        key: Bytes::copy_from_slice(key.as_bytes()),
        range_end: Bytes::new(),
        target_union: Some(target),
    }
}

/// A put of `value` under `key`, returning the previous value when `prev_kv`.
pub(super) fn put(key: &str, value: Bytes, prev_kv: bool) -> RequestOp {
    RequestOp {
        request: Some(request_op::Request::RequestPut(PutRequest {
            key: Bytes::copy_from_slice(key.as_bytes()),
            value,
            prev_kv,
            ..Default::default()
        })),
    }
}

/// A delete of `key` returning its previous value.
pub(super) fn delete(key: &str) -> RequestOp {
    RequestOp {
        request: Some(request_op::Request::RequestDeleteRange(
            DeleteRangeRequest {
                key: Bytes::copy_from_slice(key.as_bytes()),
                prev_kv: true,
                ..Default::default()
            },
        )),
    }
}

/// A read of `key`.
pub(super) fn get(key: &str) -> RequestOp {
    RequestOp {
        request: Some(request_op::Request::RequestRange(RangeRequest {
            key: Bytes::copy_from_slice(key.as_bytes()),
            ..Default::default()
        })),
    }
}

/// The key-value read by the first range of a transaction's responses (its `else` branch).
pub(super) fn txn_got(responses: &[ResponseOp]) -> Option<&KeyValue> {
    responses.iter().find_map(|r| match &r.response {
        Some(response_op::Response::ResponseRange(g)) => g.kvs.first(),
        _ => None,
    })
}

/// The previous key-value a transaction's put or delete returned.
pub(super) fn txn_prev(responses: &[ResponseOp]) -> Option<&KeyValue> {
    responses.iter().find_map(|r| match &r.response {
        Some(response_op::Response::ResponsePut(p)) => p.prev_kv.as_ref(),
        Some(response_op::Response::ResponseDeleteRange(d)) => d.prev_kvs.first(),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_end_is_the_next_prefix() {
        assert_eq!(range_end(b"/registry/"), b"/registry0".to_vec());
        assert_eq!(range_end(b"a\xff"), b"b".to_vec());
        assert_eq!(range_end(b"\xff"), vec![0]);
    }

    #[test]
    fn a_compare_names_its_target() {
        let c = compare(
            "k",
            compare::CompareResult::Equal,
            compare::TargetUnion::ModRevision(7),
        );
        assert_eq!(c.target, compare::CompareTarget::Mod as i32);
        assert_eq!(c.result, compare::CompareResult::Equal as i32);
        assert_eq!(&c.key[..], b"k");
    }

    #[test]
    fn certfile_without_keyfile_is_refused() {
        let mut config = EtcdConfig::new(vec!["https://127.0.0.1:2379".into()]);
        config.cert_file = Some("/nonexistent.crt".into());
        let err = tls_config(&config).err().map(|e| e.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("--etcd-certfile")),
            "{err:?}"
        );
    }

    #[test]
    fn plain_http_needs_no_tls() {
        let config = EtcdConfig::new(vec!["http://127.0.0.1:2379".into()]);
        assert!(matches!(tls_config(&config), Ok(None)));
    }
}
