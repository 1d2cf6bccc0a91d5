//! `--encryption-provider-config`: kube's `EncryptionConfiguration` read, validated and turned
//! into the transformers of each resource, as
//! `staging/src/k8s.io/apiserver/pkg/server/options/encryptionconfig/config.go`.
//!
//! Providers identity, aescbc, aesgcm and secretbox; the first of a resource's providers (and
//! the first key of a provider) writes, all read. KMS providers are refused.

pub mod types;
pub mod validation;

use std::path::Path;
use std::sync::Arc;

use base64::Engine as _;
use rkcm_storage::value::aes::{Cbc, Gcm};
use rkcm_storage::value::identity::Identity;
use rkcm_storage::value::secretbox::Secretbox;
use rkcm_storage::value::{
    GroupResource, PrefixTransformer, PrefixTransformers, ResourceTransformers,
    TransformationMetrics, Transformer,
};

pub use types::EncryptionConfiguration;
use types::{Key, ProviderConfiguration};

const AES_CBC_PREFIX: &str = "k8s:enc:aescbc:v1:";
const AES_GCM_PREFIX: &str = "k8s:enc:aesgcm:v1:";
const SECRETBOX_PREFIX: &str = "k8s:enc:secretbox:v1:";

/// Why an encryption configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file cannot be read.
    #[error(
        "error while parsing file: error opening encryption provider configuration file {path:?}"
    )]
    Read {
        /// The file.
        path: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is empty.
    #[error("error while parsing file: encryption provider configuration file {0:?} is empty")]
    Empty(String),
    /// The file is not YAML or JSON of the configuration's shape.
    #[error("error while parsing file: {0}")]
    Decode(String),
    /// The file holds another kind than `apiserver.config.k8s.io/v1` `EncryptionConfiguration`.
    #[error(
        "error while parsing file: no kind {kind:?} is registered for version {api_version:?}"
    )]
    Kind {
        /// The `apiVersion` found.
        api_version: String,
        /// The `kind` found.
        kind: String,
    },
    /// Validation failed; the message names each field (kube's messages).
    #[error("error while parsing file: {}", aggregate(.0))]
    Invalid(Vec<rkcm_apimachinery::field::FieldError>),
    /// A resource is listed after a wildcard of an earlier entry that already covers it.
    #[error("resource {resource:?} is masked by earlier rule {by:?}")]
    Masked {
        /// The resource, as configured.
        resource: String,
        /// The earlier wildcard.
        by: String,
    },
}

/// Go's error aggregate: one message alone, several in brackets.
fn aggregate(errors: &[rkcm_apimachinery::field::FieldError]) -> String {
    let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
    match messages.as_slice() {
        [one] => one.clone(),
        _ => format!("[{}]", messages.join(", ")),
    }
}

/// Reads, validates and builds the configuration in `path`; transformations are counted in
/// `metrics`.
pub fn load(
    path: &Path,
    metrics: &TransformationMetrics,
) -> Result<Arc<ResourceTransformers>, Error> {
    let data = std::fs::read(path).map_err(|source| Error::Read {
        path: path.display().to_string(),
        source,
    })?;
    if data.is_empty() {
        return Err(Error::Empty(path.display().to_string()));
    }
    let config = parse(&data)?;
    build(&config, metrics)
}

/// Decodes and validates a configuration (YAML or JSON).
pub fn parse(data: &[u8]) -> Result<EncryptionConfiguration, Error> {
    let config: EncryptionConfiguration =
        serde_norway::from_slice(data).map_err(|e| Error::Decode(e.to_string()))?;
    if config.api_version != types::API_VERSION || config.kind != types::KIND {
        return Err(Error::Kind {
            api_version: config.api_version,
            kind: config.kind,
        });
    }
    let errors = validation::validate(&config);
    if !errors.is_empty() {
        return Err(Error::Invalid(errors));
    }
    Ok(config)
}

/// The transformers of a validated configuration (`getTransformerOverridesAndKMSPluginProbes`).
pub fn build(
    config: &EncryptionConfiguration,
    metrics: &TransformationMetrics,
) -> Result<Arc<ResourceTransformers>, Error> {
    let mut by_resource: Vec<(GroupResource, Vec<PrefixTransformer>)> = Vec::new();
    for conf in &config.resources {
        let providers = conf
            .providers
            .iter()
            .map(|p| provider(p, metrics))
            .collect::<Result<Vec<_>, _>>()?;
        for resource in &conf.resources {
            let gr = GroupResource::parse(resource);
            let configured = |g: &str, r: &str| {
                by_resource
                    .iter()
                    .any(|(c, _)| c.group == g && c.resource == r)
            };
            for (g, r) in [(gr.group.as_str(), "*"), ("*", "*")] {
                if configured(g, r) {
                    return Err(Error::Masked {
                        resource: gr.to_config_string(),
                        by: GroupResource {
                            group: g.to_string(),
                            resource: r.to_string(),
                        }
                        .to_config_string(),
                    });
                }
            }
            match by_resource.iter_mut().find(|(c, _)| *c == gr) {
                Some((_, list)) => list.extend(providers.iter().cloned()),
                None => by_resource.push((gr, providers.clone())),
            }
        }
    }
    let entries = by_resource
        .into_iter()
        .map(|(gr, list)| {
            let t: Arc<dyn Transformer> = Arc::new(PrefixTransformers::new(
                list,
                "no matching prefix found",
                metrics.clone(),
            ));
            (gr, t)
        })
        .collect();
    Ok(Arc::new(ResourceTransformers::new(entries)))
}

/// One provider's transformer under its prefix (validation has checked its keys).
fn provider(
    p: &ProviderConfiguration,
    metrics: &TransformationMetrics,
) -> Result<PrefixTransformer, Error> {
    let invalid = |field: &str, detail: String| {
        Error::Invalid(vec![
            rkcm_apimachinery::field::FieldError::invalid_omitting_value(field, &detail),
        ])
    };
    let (prefix, keys, no_match): (&str, Vec<PrefixTransformer>, &'static str) =
        if let Some(aes) = &p.aesgcm {
            let keys = keyed(&aes.keys, |name, secret| {
                Gcm::new(secret)
                    .map(|t| Arc::new(t) as Arc<dyn Transformer>)
                    .map_err(|e| {
                        invalid(
                            "aesgcm",
                            format!("error while creating cipher for named key {name}: {e}"),
                        )
                    })
            })?;
            (
                AES_GCM_PREFIX,
                keys,
                "no matching key was found for the provided AES transformer",
            )
        } else if let Some(aes) = &p.aescbc {
            let keys = keyed(&aes.keys, |name, secret| {
                Cbc::new(secret)
                    .map(|t| Arc::new(t) as Arc<dyn Transformer>)
                    .map_err(|e| {
                        invalid(
                            "aescbc",
                            format!("error while creating cipher for named key {name}: {e}"),
                        )
                    })
            })?;
            (
                AES_CBC_PREFIX,
                keys,
                "no matching key was found for the provided AES transformer",
            )
        } else if let Some(sb) = &p.secretbox {
            let keys = keyed(&sb.keys, |_, secret| {
                let key: [u8; 32] = secret.try_into().map_err(|_| {
                    invalid(
                        "secretbox",
                        format!(
                            "expected key size 32 for secretbox provider, got {}",
                            secret.len()
                        ),
                    )
                })?;
                Ok(Arc::new(Secretbox::new(&key)) as Arc<dyn Transformer>)
            })?;
            (
                SECRETBOX_PREFIX,
                keys,
                "no matching key was found for the provided Secretbox transformer",
            )
        } else {
            // Identity (validation refused KMS and empty providers).
            return Ok(PrefixTransformer {
                prefix: Vec::new(),
                transformer: Arc::new(Identity),
            });
        };
    Ok(PrefixTransformer {
        prefix: prefix.as_bytes().to_vec(),
        transformer: Arc::new(PrefixTransformers::new(keys, no_match, metrics.clone())),
    })
}

/// A transformer per key, under its `<name>:` prefix.
fn keyed(
    keys: &[Key],
    make: impl Fn(&str, &[u8]) -> Result<Arc<dyn Transformer>, Error>,
) -> Result<Vec<PrefixTransformer>, Error> {
    keys.iter()
        .map(|key| {
            let secret = base64::engine::general_purpose::STANDARD
                .decode(&key.secret)
                .map_err(|e| {
                    Error::Decode(format!(
                        "could not obtain secret for named key {}: {e}",
                        key.name
                    ))
                })?;
            Ok(PrefixTransformer {
                prefix: format!("{}:", key.name).into_bytes(),
                transformer: make(&key.name, &secret)?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY1: &str = "a2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2s="; // 32 bytes
    const KEY2: &str = "AAECAwQFBgcICQoLDA0ODw=="; // 16 bytes

    fn config(yaml: &str) -> Result<Arc<ResourceTransformers>, Error> {
        build(&parse(yaml.as_bytes())?, &TransformationMetrics::default())
    }

    fn err(yaml: &str) -> String {
        match config(yaml) {
            Ok(_) => panic!("accepted:\n{yaml}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_kube_configuration_builds_its_providers_in_order() {
        let t = config(&format!(
            "apiVersion: apiserver.config.k8s.io/v1\n\
             kind: EncryptionConfiguration\n\
             resources:\n\
             - resources: [secrets, configmaps]\n  \
               providers:\n  \
               - aescbc:\n      keys:\n      - name: key1\n        secret: {KEY1}\n  \
               - aesgcm:\n      keys:\n      - name: key2\n        secret: {KEY2}\n  \
               - secretbox:\n      keys:\n      - name: key3\n        secret: {KEY1}\n  \
               - identity: {{}}\n\
             - resources: ['*.apps']\n  providers:\n  - identity: {{}}\n"
        ))
        .unwrap();
        let secrets = t.for_key("/core/secrets/ns/s").unwrap();
        let stored = secrets.transform_to_storage(b"{}", b"k").unwrap();
        assert!(stored.starts_with(b"k8s:enc:aescbc:v1:key1:"));
        assert!(t.for_key("/core/configmaps/ns/c").is_some());
        assert!(t.for_key("/apps/deployments/ns/d").is_some());
        assert!(t.for_key("/core/pods/ns/p").is_none());
        // Plain values read (identity is listed), stale.
        assert_eq!(
            secrets.transform_from_storage(b"{}", b"k").unwrap(),
            (b"{}".to_vec(), true)
        );
    }

    #[test]
    fn validation_names_the_field_with_kubes_messages() {
        let head = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n";
        assert_eq!(
            err(head),
            "error while parsing file: resources: Required value: at least one resources is required"
        );
        assert_eq!(
            err(&format!(
                "{head}resources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys:\n      - name: k\n        secret: c2hvcnQ=\n"
            )),
            "error while parsing file: resources[0].providers[0].aescbc.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 5, expected one of [16 24 32]"
        );
        assert_eq!(
            err(&format!(
                "{head}resources:\n- resources: [secrets]\n  providers:\n  - secretbox:\n      keys:\n      - name: k\n        secret: '{KEY2}'\n"
            )),
            "error while parsing file: resources[0].providers[0].secretbox.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 16, expected one of [32]"
        );
        assert_eq!(
            err(&format!(
                "{head}resources:\n- resources: [secrets]\n  providers:\n  - aesgcm:\n      keys:\n      - secret: '!!'\n"
            )),
            "error while parsing file: [resources[0].providers[0].aesgcm.keys[0].name: Required value: name is a mandatory field for a key, resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: \"REDACTED\": secrets must be base64 encoded]"
        );
        assert_eq!(
            err(&format!(
                "{head}resources:\n- resources: [secrets]\n  providers:\n  - kms:\n      apiVersion: v2\n      name: p\n      endpoint: unix:///kms.sock\n"
            )),
            "error while parsing file: resources[0].providers[0].kms: Invalid value: KMS providers are not supported; use aescbc, aesgcm, secretbox or identity"
        );
        assert_eq!(
            err(&format!(
                "{head}resources:\n- resources: [secrets]\n  providers:\n  - identity: {{}}\n    aescbc:\n      keys: []\n"
            )),
            "error while parsing file: resources[0].providers[0]: Invalid value: more than one provider specified in a single element, should split into different list elements"
        );
        assert_eq!(
            err(&format!(
                "{head}resources:\n- resources: [Secrets, events.events.k8s.io]\n  providers:\n  - identity: {{}}\n"
            )),
            "error while parsing file: [resources[0].resources[0]: Invalid value: \"Secrets\": resource name should not contain capital letters, resources[0].resources[1]: Invalid value: \"events.events.k8s.io\": '*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file]"
        );
        assert_eq!(
            err(&format!(
                "{head}resources:\n- resources: ['*']\n  providers:\n  - identity: {{}}\n"
            )),
            "error while parsing file: resources[0].resources[0]: Invalid value: \"*\": use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"
        );
        assert!(err(&format!(
            "{head}resources:\n- resources: [secrets, '*.']\n  providers:\n  - identity: {{}}\n"
        ))
        .contains("using overlapping resources such as 'secrets' and '*.'"));
        assert_eq!(
            err("apiVersion: v1\nkind: ConfigMap\n"),
            "error while parsing file: no kind \"ConfigMap\" is registered for version \"v1\""
        );
    }

    #[test]
    fn values_sealed_by_another_implementation_of_kubes_format_read() {
        // Sealed with Python's `cryptography` (AES-GCM with the etcd key as authenticated data;
        // AES-192-CBC with PKCS#7), framed as kube-apiserver frames them.
        let t = config(
            "apiVersion: apiserver.config.k8s.io/v1\n\
             kind: EncryptionConfiguration\n\
             resources:\n\
             - resources: [secrets]\n  providers:\n  \
               - aesgcm:\n      keys:\n      - name: key1\n        secret: AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n  \
               - aescbc:\n      keys:\n      - name: key2\n        secret: AAECAwQFBgcICQoLDA0ODxAREhMUFRYX\n",
        )
        .unwrap();
        let hex = |s: &str| -> Vec<u8> {
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
                .collect()
        };
        let plain = br#"{"kind":"Secret","data":{"k":"dg=="}}"#;
        let key = b"/registry/core/secrets/default/s";
        let secrets = t.for_key("/core/secrets/default/s").unwrap();
        let gcm = [
            &b"k8s:enc:aesgcm:v1:key1:"[..],
            &hex("6465666768696a6b6c6d6e6f3339b50f178d74a41c313a8ba8001edf6ee0626bff0dd148dcf3c76ac181c12fa9d462bd31c84212114ee98123891e878cfd9e0e72"),
        ]
        .concat();
        assert_eq!(
            secrets.transform_from_storage(&gcm, key).unwrap(),
            (plain.to_vec(), false)
        );
        assert!(secrets
            .transform_from_storage(&gcm, b"/registry/core/secrets/default/t")
            .is_err());
        let cbc = [
            &b"k8s:enc:aescbc:v1:key2:"[..],
            &hex("c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8f6b0370c427d3c5931dad0311989d6f7bdc66902fc49725f4ecc3d015a69896e6991fa31d91b4a70597d01a675d16f"),
        ]
        .concat();
        assert_eq!(
            secrets.transform_from_storage(&cbc, key).unwrap(),
            (plain.to_vec(), true)
        );
    }

    #[test]
    fn a_json_configuration_reads_too() {
        let t = config(&format!(
            r#"{{"apiVersion":"apiserver.config.k8s.io/v1","kind":"EncryptionConfiguration","resources":[{{"resources":["*.*"],"providers":[{{"secretbox":{{"keys":[{{"name":"k","secret":"{KEY1}"}}]}}}}]}}]}}"#
        ))
        .unwrap();
        let stored = t
            .for_key("/apps/deployments/ns/d")
            .unwrap()
            .transform_to_storage(b"{}", b"")
            .unwrap();
        assert!(stored.starts_with(b"k8s:enc:secretbox:v1:k:"));
    }

    #[test]
    fn the_documented_example_is_valid() {
        let doc = include_str!("../../../../docs/encryption.md");
        let start = doc.find("```yaml\n").expect("an example") + "```yaml\n".len();
        let end = start + doc[start..].find("```").expect("its end");
        let t = config(&doc[start..end]).expect("the example builds");
        assert!(t.for_key("/core/secrets/ns/s").is_some());
        assert!(t.for_key("/apps/deployments/ns/d").is_some());
    }

    #[test]
    fn a_resource_after_a_wildcard_that_covers_it_is_masked() {
        let head = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n";
        assert_eq!(
            err(&format!(
                "{head}resources:\n- resources: ['*.*']\n  providers:\n  - identity: {{}}\n- resources: [secrets]\n  providers:\n  - identity: {{}}\n"
            )),
            "resource \"secrets\" is masked by earlier rule \"*.*\""
        );
        assert_eq!(
            err(&format!(
                "{head}resources:\n- resources: ['*.']\n  providers:\n  - identity: {{}}\n- resources: [secrets]\n  providers:\n  - identity: {{}}\n"
            )),
            "resource \"secrets\" is masked by earlier rule \"*.\""
        );
    }
}
