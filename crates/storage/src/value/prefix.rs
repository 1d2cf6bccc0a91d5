//! Transformers chosen by the prefix of the stored value (`NewPrefixTransformers` in
//! `value/transformer.go`).

use std::sync::Arc;
use std::time::Instant;

use super::metrics::{Direction, TransformationMetrics};
use super::{Error, Result, Transformer};

/// A transformer and the prefix of the values it writes (`k8s:enc:aescbc:v1:`, or a key's
/// `<name>:` inside a provider; empty for identity).
#[derive(Clone)]
pub struct PrefixTransformer {
    /// Prefix of the stored values.
    pub prefix: Vec<u8>,
    /// The transformer of what follows the prefix.
    pub transformer: Arc<dyn Transformer>,
}

/// Reads a value with the first transformer whose prefix it carries and writes with the first
/// transformer, adding its prefix. A value read by any other than the first is stale.
///
/// Several transformers may share a prefix (one provider listed twice with different keys,
/// rotating from one to the other): a failure of one lets the next try. An empty prefix
/// (identity) that fails is passed over without counting.
pub struct PrefixTransformers {
    transformers: Vec<PrefixTransformer>,
    /// What a value no prefix matches fails with.
    no_match: &'static str,
    metrics: TransformationMetrics,
}

impl PrefixTransformers {
    /// Transformers tried in order, the first writing; `no_match` is the error of a value none
    /// of them reads. `transformers` must not be empty (validation requires one provider and
    /// one key).
    pub fn new(
        transformers: Vec<PrefixTransformer>,
        no_match: &'static str,
        metrics: TransformationMetrics,
    ) -> Self {
        assert!(!transformers.is_empty(), "at least one transformer");
        Self {
            transformers,
            no_match,
            metrics,
        }
    }
}

/// The `transformer_prefix` label of `prefix`.
fn label(prefix: &[u8]) -> String {
    if prefix.is_empty() {
        "identity".to_string()
    } else {
        String::from_utf8_lossy(prefix).into_owned()
    }
}

impl Transformer for PrefixTransformers {
    fn transform_from_storage(&self, data: &[u8], context: &[u8]) -> Result<(Vec<u8>, bool)> {
        let start = Instant::now();
        let mut errors = Vec::new();
        for (i, t) in self.transformers.iter().enumerate() {
            let Some(rest) = data.strip_prefix(t.prefix.as_slice()) else {
                continue;
            };
            let result = t.transformer.transform_from_storage(rest, context);
            if t.prefix.is_empty() && result.is_err() {
                continue;
            }
            self.metrics.record(
                Direction::FromStorage,
                &label(&t.prefix),
                start.elapsed(),
                result.is_ok(),
            );
            match result {
                Ok((value, stale)) => return Ok((value, stale || i != 0)),
                Err(e) => errors.push(e),
            }
        }
        match errors.len() {
            0 => {
                self.metrics
                    .record(Direction::FromStorage, "unknown", start.elapsed(), false);
                Err(Error::NoMatch(self.no_match))
            }
            1 => Err(errors.remove(0)),
            _ => Err(Error::Aggregate(errors)),
        }
    }

    fn transform_to_storage(&self, data: &[u8], context: &[u8]) -> Result<Vec<u8>> {
        let start = Instant::now();
        let first = &self.transformers[0];
        let result = first.transformer.transform_to_storage(data, context);
        self.metrics.record(
            Direction::ToStorage,
            &label(&first.prefix),
            start.elapsed(),
            result.is_ok(),
        );
        let sealed = result?;
        let mut out = Vec::with_capacity(first.prefix.len() + sealed.len());
        out.extend_from_slice(&first.prefix);
        out.extend_from_slice(&sealed);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::aes::Cbc;
    use super::super::identity::Identity;
    use super::*;

    fn aescbc(keys: &[(&str, u8)], metrics: &TransformationMetrics) -> PrefixTransformer {
        let keys = keys
            .iter()
            .map(|(name, byte)| PrefixTransformer {
                prefix: format!("{name}:").into_bytes(),
                transformer: Arc::new(Cbc::new(&[*byte; 32]).unwrap()),
            })
            .collect();
        PrefixTransformer {
            prefix: b"k8s:enc:aescbc:v1:".to_vec(),
            transformer: Arc::new(PrefixTransformers::new(
                keys,
                "no matching key was found for the provided AES transformer",
                metrics.clone(),
            )),
        }
    }

    fn providers(list: Vec<PrefixTransformer>, m: &TransformationMetrics) -> PrefixTransformers {
        PrefixTransformers::new(list, "no matching prefix found", m.clone())
    }

    #[test]
    fn the_first_provider_writes_with_its_prefix_and_key_name() {
        let m = TransformationMetrics::default();
        let t = providers(vec![aescbc(&[("key1", 1)], &m)], &m);
        let stored = t.transform_to_storage(b"{\"a\":1}", b"").unwrap();
        assert!(stored.starts_with(b"k8s:enc:aescbc:v1:key1:"));
        assert_eq!(
            t.transform_from_storage(&stored, b"").unwrap(),
            (b"{\"a\":1}".to_vec(), false)
        );
        assert_eq!(
            m.operations(Direction::ToStorage, "k8s:enc:aescbc:v1:", "OK"),
            1
        );
        assert_eq!(m.operations(Direction::ToStorage, "key1:", "OK"), 1);
        assert_eq!(
            m.operations(Direction::FromStorage, "k8s:enc:aescbc:v1:", "OK"),
            1
        );
    }

    #[test]
    fn rotation_reads_the_old_key_as_stale_and_writes_the_new_one() {
        let m = TransformationMetrics::default();
        let old = providers(vec![aescbc(&[("key1", 1)], &m)], &m);
        let written = old.transform_to_storage(b"v", b"").unwrap();
        // key2 added first: key1's value still reads, and is stale.
        let both = providers(vec![aescbc(&[("key2", 2), ("key1", 1)], &m)], &m);
        assert_eq!(
            both.transform_from_storage(&written, b"").unwrap(),
            (b"v".to_vec(), true)
        );
        let rewritten = both.transform_to_storage(b"v", b"").unwrap();
        assert!(rewritten.starts_with(b"k8s:enc:aescbc:v1:key2:"));
        // key1 removed: only the old value fails, with kube's message.
        let new = providers(vec![aescbc(&[("key2", 2)], &m)], &m);
        assert_eq!(
            new.transform_from_storage(&rewritten, b"").unwrap(),
            (b"v".to_vec(), false)
        );
        assert_eq!(
            new.transform_from_storage(&written, b"")
                .unwrap_err()
                .to_string(),
            "no matching key was found for the provided AES transformer"
        );
    }

    #[test]
    fn one_provider_listed_twice_with_different_keys_falls_through_to_the_second() {
        let m = TransformationMetrics::default();
        // AES-GCM, whose wrong key always fails (a wrong CBC key can unpad by chance).
        let aesgcm = |byte: u8| PrefixTransformer {
            prefix: b"k8s:enc:aesgcm:v1:".to_vec(),
            transformer: Arc::new(PrefixTransformers::new(
                vec![PrefixTransformer {
                    prefix: b"k:".to_vec(),
                    transformer: Arc::new(super::super::aes::Gcm::new(&[byte; 32]).unwrap()),
                }],
                "no matching key was found for the provided AES transformer",
                m.clone(),
            )),
        };
        let key1 = providers(vec![aesgcm(1)], &m);
        let written = key1.transform_to_storage(b"v", b"").unwrap();
        // Same key name, another secret first: the first fails, the second reads.
        let t = providers(vec![aesgcm(2), aesgcm(1)], &m);
        assert_eq!(
            t.transform_from_storage(&written, b"").unwrap(),
            (b"v".to_vec(), true)
        );
    }

    #[test]
    fn identity_first_reads_plain_and_encrypted_values_and_writes_plain() {
        let m = TransformationMetrics::default();
        let enc = providers(vec![aescbc(&[("key1", 1)], &m)], &m);
        let encrypted = enc.transform_to_storage(b"v", b"").unwrap();
        let identity = PrefixTransformer {
            prefix: Vec::new(),
            transformer: Arc::new(Identity),
        };
        let t = providers(vec![identity.clone(), aescbc(&[("key1", 1)], &m)], &m);
        assert_eq!(t.transform_to_storage(b"v", b"").unwrap(), b"v");
        assert_eq!(
            t.transform_from_storage(b"v", b"").unwrap(),
            (b"v".to_vec(), false)
        );
        assert_eq!(
            t.transform_from_storage(&encrypted, b"").unwrap(),
            (b"v".to_vec(), true)
        );
        // Encryption first: plain values read through identity, stale.
        let t = providers(vec![aescbc(&[("key1", 1)], &m), identity], &m);
        assert_eq!(
            t.transform_from_storage(b"{}", b"").unwrap(),
            (b"{}".to_vec(), true)
        );
        assert_eq!(m.operations(Direction::FromStorage, "identity", "OK"), 2);
    }

    #[test]
    fn a_value_no_provider_reads_is_an_error_counted_as_unknown() {
        let m = TransformationMetrics::default();
        let t = providers(vec![aescbc(&[("key1", 1)], &m)], &m);
        assert_eq!(
            t.transform_from_storage(b"{}", b""),
            Err(Error::NoMatch("no matching prefix found"))
        );
        assert_eq!(
            m.operations(Direction::FromStorage, "unknown", "unknown-non-grpc"),
            1
        );
    }
}
