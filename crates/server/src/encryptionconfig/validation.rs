//! Validation of an `EncryptionConfiguration`, with kube's messages
//! (`staging/src/k8s.io/apiserver/pkg/apis/apiserver/validation/validation_encryption.go`).

use base64::Engine as _;
use rkcm_apimachinery::field::FieldError;
use rkcm_storage::value::GroupResource;
use serde_json::Value;

use super::types::{EncryptionConfiguration, Key};

const MORE_THAN_ONE_ELEMENT: &str =
    "more than one provider specified in a single element, should split into different list elements";
const NO_PROVIDER: &str =
    "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity";
const BASE64_ENCODING: &str = "secrets must be base64 encoded";
const EVENTS_GROUP: &str = "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file";
const EXTENSIONS_GROUP: &str =
    "'extensions' group has been removed and cannot be used for encryption";
const STAR_RESOURCE: &str =
    "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources";
const OVERLAP: &str = "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked";
const NON_REST_API_RESOURCE: &str = "resources which do not have REST API/s cannot be encrypted";
const RESOURCE_NAME: &str = "resource name should not contain capital letters";
const RESOURCE_ACROSS_GROUP: &str = "encrypting the same resource across groups is not supported";
const DUPLICATE_RESOURCE: &str = "the same resource cannot be specified multiple times";
/// rkcm's own: kube accepts KMS plugins, rkcm does not talk to them.
const KMS_UNSUPPORTED: &str =
    "KMS providers are not supported; use aescbc, aesgcm, secretbox or identity";

/// Key sizes of AES (`aes.NewCipher`).
pub const AES_KEY_SIZES: &[usize] = &[16, 24, 32];
/// Key size of secretbox.
pub const SECRETBOX_KEY_SIZES: &[usize] = &[32];

/// Every error of `c` (`ValidateEncryptionConfiguration`); empty when it is valid.
pub fn validate(c: &EncryptionConfiguration) -> Vec<FieldError> {
    let root = "resources";
    let mut errs = Vec::new();
    if c.resources.is_empty() {
        errs.push(FieldError::required(
            root,
            &format!("at least one {root} is required"),
        ));
        return errs;
    }
    for (i, conf) in c.resources.iter().enumerate() {
        let r = format!("{root}[{i}].resources");
        let p = format!("{root}[{i}].providers");
        if conf.resources.is_empty() {
            errs.push(FieldError::required(
                &r,
                &format!("at least one {r} is required"),
            ));
        }
        errs.extend(validate_resource_overlap(&conf.resources, &r));
        errs.extend(validate_resource_names(&conf.resources, &r));
        if conf.providers.is_empty() {
            errs.push(FieldError::required(
                &p,
                &format!("at least one {p} is required"),
            ));
        }
        for (j, provider) in conf.providers.iter().enumerate() {
            let path = format!("{p}[{j}]");
            match provider.count() {
                0 => {
                    errs.push(FieldError::invalid_omitting_value(&path, NO_PROVIDER));
                    continue;
                }
                1 => {}
                _ => {
                    errs.push(FieldError::invalid_omitting_value(
                        &path,
                        MORE_THAN_ONE_ELEMENT,
                    ));
                    continue;
                }
            }
            if provider.kms.is_some() {
                errs.push(FieldError::invalid_omitting_value(
                    format!("{path}.kms"),
                    KMS_UNSUPPORTED,
                ));
            } else if let Some(aes) = &provider.aesgcm {
                errs.extend(validate_keys(
                    &aes.keys,
                    &format!("{path}.aesgcm.keys"),
                    AES_KEY_SIZES,
                ));
            } else if let Some(aes) = &provider.aescbc {
                errs.extend(validate_keys(
                    &aes.keys,
                    &format!("{path}.aescbc.keys"),
                    AES_KEY_SIZES,
                ));
            } else if let Some(sb) = &provider.secretbox {
                errs.extend(validate_keys(
                    &sb.keys,
                    &format!("{path}.secretbox.keys"),
                    SECRETBOX_KEY_SIZES,
                ));
            }
        }
    }
    errs
}

fn resource_list(resources: &[String]) -> Value {
    Value::from(resources.to_vec())
}

fn validate_resource_overlap(resources: &[String], path: &str) -> Vec<FieldError> {
    if resources.len() < 2 {
        return Vec::new();
    }
    let parsed: Vec<GroupResource> = resources.iter().map(|r| GroupResource::parse(r)).collect();
    let (mut overlap, mut duplicate) = (false, false);
    for (i, r1) in parsed.iter().enumerate() {
        for (j, r2) in parsed.iter().enumerate() {
            if i == j {
                continue;
            }
            if r1 == r2 && !duplicate {
                duplicate = true;
                continue;
            }
            if overlap {
                continue;
            }
            if r1.group == "*" && r1.resource == "*" {
                overlap = true;
                continue;
            }
            if r1.group != r2.group {
                continue;
            }
            if r1.resource == "*" || r2.resource == "*" {
                overlap = true;
            }
        }
    }
    let mut errs = Vec::new();
    if duplicate {
        errs.push(FieldError::invalid(
            path,
            &resource_list(resources),
            DUPLICATE_RESOURCE,
        ));
    }
    if overlap {
        errs.push(FieldError::invalid(
            path,
            &resource_list(resources),
            OVERLAP,
        ));
    }
    errs
}

fn validate_resource_names(resources: &[String], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (j, res) in resources.iter().enumerate() {
        let jj = format!("{path}[{j}]");
        let invalid = |detail| FieldError::invalid(&jj, &Value::from(res.as_str()), detail);
        let gr = GroupResource::parse(res);
        if res.to_lowercase() != *res {
            errs.push(invalid(RESOURCE_NAME));
        } else if res == "*" {
            errs.push(invalid(STAR_RESOURCE));
        } else if matches!(
            res.as_str(),
            "apiserveripinfo" | "serviceipallocations" | "servicenodeportallocations"
        ) {
            errs.push(invalid(NON_REST_API_RESOURCE));
        } else if gr.group == "events.k8s.io" {
            errs.push(invalid(EVENTS_GROUP));
        } else if gr.group == "extensions" {
            errs.push(invalid(EXTENSIONS_GROUP));
        } else if gr.group == "*" && gr.resource != "*" {
            errs.push(invalid(RESOURCE_ACROSS_GROUP));
        }
    }
    errs
}

fn validate_keys(keys: &[Key], path: &str, sizes: &[usize]) -> Vec<FieldError> {
    if keys.is_empty() {
        return vec![FieldError::required(path, "at least one keys is required")];
    }
    let mut errs = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let path = format!("{path}[{i}]");
        if key.name.is_empty() {
            errs.push(FieldError::required(
                format!("{path}.name"),
                "name is a mandatory field for a key",
            ));
        }
        if key.secret.is_empty() {
            errs.push(FieldError::required(
                format!("{path}.secret"),
                "secret is a mandatory field for a key",
            ));
            continue;
        }
        let redacted = Value::from("REDACTED");
        match base64::engine::general_purpose::STANDARD.decode(&key.secret) {
            Err(_) => errs.push(FieldError::invalid(
                format!("{path}.secret"),
                &redacted,
                BASE64_ENCODING,
            )),
            Ok(secret) if !sizes.contains(&secret.len()) => errs.push(FieldError::invalid(
                format!("{path}.secret"),
                &redacted,
                &format!(
                    "secret is not of the expected length, got {}, expected one of [{}]",
                    secret.len(),
                    sizes
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
            )),
            Ok(_) => {}
        }
    }
    errs
}
