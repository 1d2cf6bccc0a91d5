//! kube-apiserver's etcd flags, as `rkcm up` takes them.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use rkcm_apiserver::storage::EtcdConfig;

/// `--etcd-servers` and the flags that go with it; without `--etcd-servers` objects stay in the
/// data dir's embedded store.
#[derive(Debug, Clone, Args)]
pub struct EtcdArgs {
    /// List of etcd servers to connect with (scheme://ip:port), comma separated. Unset: objects
    /// are kept in the data dir's embedded store.
    #[arg(long, value_delimiter = ',', value_name = "URLS")]
    pub etcd_servers: Vec<String>,

    /// SSL Certificate Authority file used to secure etcd communication.
    #[arg(long, value_name = "FILE")]
    pub etcd_cafile: Option<PathBuf>,

    /// SSL certification file used to secure etcd communication.
    #[arg(long, value_name = "FILE")]
    pub etcd_certfile: Option<PathBuf>,

    /// SSL key file used to secure etcd communication.
    #[arg(long, value_name = "FILE")]
    pub etcd_keyfile: Option<PathBuf>,

    /// The prefix to prepend to all resource paths in etcd.
    #[arg(long, default_value = rkcm_apiserver::storage::DEFAULT_PREFIX, value_name = "PREFIX")]
    pub etcd_prefix: String,

    /// The interval of compaction requests. If 0, the compaction request from apiserver is
    /// disabled.
    #[arg(long, default_value = "5m0s", value_parser = rkcm_apimachinery::duration::parse_non_negative, value_name = "DURATION")]
    pub etcd_compaction_interval: Duration,
}

impl EtcdArgs {
    /// The etcd configuration, or `None` when no `--etcd-servers` were given.
    pub fn config(&self) -> Option<EtcdConfig> {
        let servers: Vec<String> = self
            .etcd_servers
            .iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if servers.is_empty() {
            return None;
        }
        Some(EtcdConfig {
            ca_file: self.etcd_cafile.clone(),
            cert_file: self.etcd_certfile.clone(),
            key_file: self.etcd_keyfile.clone(),
            prefix: self.etcd_prefix.clone(),
            compaction_interval: self.etcd_compaction_interval,
            ..EtcdConfig::new(servers)
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        etcd: EtcdArgs,
    }

    fn parse(args: &[&str]) -> Option<EtcdConfig> {
        let mut argv = vec!["rkcm"];
        argv.extend_from_slice(args);
        Flags::try_parse_from(argv)
            .expect("flags parse")
            .etcd
            .config()
    }

    #[test]
    fn without_etcd_servers_the_embedded_store_is_used() {
        assert!(parse(&[]).is_none());
        assert!(parse(&["--etcd-servers="]).is_none());
    }

    #[test]
    fn etcd_flags_have_kube_apiservers_defaults() {
        let c = parse(&[
            "--etcd-servers",
            "http://127.0.0.1:2379,http://127.0.0.1:22379",
        ])
        .expect("etcd");
        assert_eq!(
            c.servers,
            ["http://127.0.0.1:2379", "http://127.0.0.1:22379"]
        );
        assert_eq!(c.prefix, "/registry");
        assert_eq!(c.compaction_interval, Duration::from_secs(300));
        assert!(c.ca_file.is_none());
    }

    #[test]
    fn etcd_tls_files_prefix_and_compaction_interval_are_taken() {
        let c = parse(&[
            "--etcd-servers=https://10.0.0.1:2379",
            "--etcd-cafile=/ca.crt",
            "--etcd-certfile=/c.crt",
            "--etcd-keyfile=/c.key",
            "--etcd-prefix=/other",
            "--etcd-compaction-interval=0",
        ])
        .expect("etcd");
        assert_eq!(c.ca_file.as_deref(), Some(std::path::Path::new("/ca.crt")));
        assert_eq!(c.key_file.as_deref(), Some(std::path::Path::new("/c.key")));
        assert_eq!(c.prefix, "/other");
        assert!(c.compaction_interval.is_zero());
    }
}
