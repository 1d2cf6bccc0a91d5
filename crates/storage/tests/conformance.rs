//! The storage conformance list (`storage::conformance`) run against every backend: in memory,
//! redb, and etcd (a throwaway `etcd` process per test), each also behind the encrypting
//! [`TransformingBackend`] with aesgcm for every resource.

use std::sync::Arc;
use std::time::Duration;

use rkcm_storage::conformance::Harness;
use rkcm_storage::etcd::testing::EtcdProcess;
use rkcm_storage::etcd::{EtcdBackend, EtcdConfig};
use rkcm_storage::memory::MemoryBackend;
use rkcm_storage::redb::RedbBackend;
use rkcm_storage::value::aes::Gcm;
use rkcm_storage::value::{
    GroupResource, PrefixTransformer, PrefixTransformers, ResourceTransformers,
    TransformationMetrics, TransformingBackend,
};
use rkcm_storage::Backend;

struct Memory;

#[async_trait::async_trait]
impl Harness for Memory {
    async fn open(&self) -> Arc<dyn Backend> {
        Arc::new(MemoryBackend::new())
    }
    fn durable(&self) -> bool {
        false
    }
    fn shared(&self) -> bool {
        false
    }
}

struct Redb {
    dir: tempfile::TempDir,
}

#[async_trait::async_trait]
impl Harness for Redb {
    async fn open(&self) -> Arc<dyn Backend> {
        let path = self.dir.path().join("db.redb");
        // A dropped backend's writer thread holds the file until it sees its channel close.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            match RedbBackend::open(&path) {
                Ok(b) => return Arc::new(b),
                Err(e) if tokio::time::Instant::now() < deadline => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err(e) => panic!("reopen {}: {e}", path.display()),
            }
        }
    }
    fn durable(&self) -> bool {
        true
    }
    fn shared(&self) -> bool {
        false
    }
}

struct Etcd {
    etcd: EtcdProcess,
}

#[async_trait::async_trait]
impl Harness for Etcd {
    async fn open(&self) -> Arc<dyn Backend> {
        let mut config = EtcdConfig::new(self.etcd.endpoints());
        config.request_timeout = Duration::from_secs(10);
        Arc::new(EtcdBackend::connect(config).await.expect("connect to etcd"))
    }
    fn durable(&self) -> bool {
        true
    }
    fn shared(&self) -> bool {
        true
    }
}

/// `harness`'s backends behind aesgcm for `*.*` (one key shared by every backend opened).
struct Encrypted<H>(H);

#[async_trait::async_trait]
impl<H: Harness> Harness for Encrypted<H> {
    async fn open(&self) -> Arc<dyn Backend> {
        let metrics = TransformationMetrics::default();
        let key = PrefixTransformer {
            prefix: b"key1:".to_vec(),
            transformer: Arc::new(Gcm::new(&[7; 32]).expect("a 32-byte key")),
        };
        let provider = PrefixTransformer {
            prefix: b"k8s:enc:aesgcm:v1:".to_vec(),
            transformer: Arc::new(PrefixTransformers::new(
                vec![key],
                "no matching key was found for the provided AES transformer",
                metrics.clone(),
            )),
        };
        let all = Arc::new(PrefixTransformers::new(
            vec![provider],
            "no matching prefix found",
            metrics,
        ));
        let transformers = ResourceTransformers::new(vec![(GroupResource::parse("*.*"), all)]);
        Arc::new(TransformingBackend::new(
            self.0.open().await,
            Arc::new(transformers),
            "/registry",
        ))
    }
    fn durable(&self) -> bool {
        self.0.durable()
    }
    fn shared(&self) -> bool {
        self.0.shared()
    }
}

mod memory {
    rkcm_storage::storage_conformance_tests!(Some(super::Memory));
}

mod redb {
    rkcm_storage::storage_conformance_tests!(Some(super::Redb {
        dir: tempfile::tempdir().expect("tempdir"),
    }));
}

mod etcd {
    rkcm_storage::storage_conformance_tests!(
        rkcm_storage::etcd::testing::EtcdProcess::start_or_skip().map(|etcd| super::Etcd { etcd })
    );
}

mod encrypted_memory {
    rkcm_storage::storage_conformance_tests!(Some(super::Encrypted(super::Memory)));
}

mod encrypted_redb {
    rkcm_storage::storage_conformance_tests!(Some(super::Encrypted(super::Redb {
        dir: tempfile::tempdir().expect("tempdir"),
    })));
}

mod encrypted_etcd {
    rkcm_storage::storage_conformance_tests!(
        rkcm_storage::etcd::testing::EtcdProcess::start_or_skip()
            .map(|etcd| super::Encrypted(super::Etcd { etcd }))
    );
}
