//! CertificateSigningRequests: the PKCS#10 request, `signerName`, `usages`,
//! `expirationSeconds`, the conditions and issued certificate of the status, and the three
//! update paths (full update, `/status`, `/approval`).
//!
//! Mirrors `pkg/apis/certificates/validation` (certificates/v1 rules) and
//! `pkg/registry/certificates/certificates/strategy.go`. The spec never changes after create:
//! every update path puts the stored spec back, as kube does. The `/approval` path is
//! [`prepare_for_approval_update`] + [`validate_approval_update`], for the REST layer to call
//! when it routes that subresource.

use std::collections::BTreeSet;

use base64::Engine as _;
use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{json, Map, Value};
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::pem::Pem;
use x509_parser::prelude::FromDer;

use super::generic::GenericStrategy;
use super::hooked::{HookedStrategy, Hooks};
use super::meta::{is_dns1123_label, is_dns1123_subdomain};
use super::object::{copy, get, get_str, object_mut, semantically_equal, set};
use super::{FieldError, FieldErrorKind};

/// `allValidUsages` (`certificates.KeyUsage` values).
const USAGES: &[&str] = &[
    "signing",
    "digital signature",
    "content commitment",
    "key encipherment",
    "key agreement",
    "data encipherment",
    "cert sign",
    "crl sign",
    "encipher only",
    "decipher only",
    "any",
    "server auth",
    "client auth",
    "code signing",
    "email protection",
    "s/mime",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "timestamping",
    "ocsp signing",
    "microsoft sgc",
    "netscape sgc",
];

/// `certificates.LegacyUnknownSignerName`, refused by certificates/v1.
const LEGACY_UNKNOWN_SIGNER: &str = "kubernetes.io/legacy-unknown";
/// Condition types that may only be `True` (`trueConditionTypes`).
const TRUE_ONLY_TYPES: &[&str] = &["Approved", "Denied", "Failed"];

/// CSR names are not constrained (`ValidateCertificateRequestName`).
fn any_name(_name: &str, _prefix: bool) -> Vec<String> {
    Vec::new()
}

/// Decodes a `[]byte` field held as base64 text; `None` when absent or not base64.
fn bytes_of(obj: &Value, path: &[&str]) -> Option<Vec<u8>> {
    let text = get_str(obj, path)?;
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

/// Renders a `[]byte` as Go's `%#v` does: `[]byte{0x2d, 0x2d}`.
fn render_bytes(bytes: Option<&[u8]>) -> String {
    match bytes {
        None => "[]byte(nil)".to_string(),
        Some(b) => {
            let items: Vec<String> = b.iter().map(|x| format!("{x:#x}")).collect();
            format!("[]byte{{{}}}", items.join(", "))
        }
    }
}

/// The first PEM block of `data`, as `pem.Decode` finds it (text around blocks is skipped).
fn first_pem_block(data: &[u8]) -> Option<Pem> {
    Pem::iter_from_buffer(data).next().and_then(Result::ok)
}

/// `certificates.ParseCSR` followed by `CheckSignature`.
///
/// The messages of parse and signature failures come from the Rust parser and differ from Go's
/// `crypto/x509` texts; the PEM check has kube's message.
fn check_request(der_or_pem: &[u8]) -> Result<(), String> {
    let block = first_pem_block(der_or_pem)
        .filter(|b| b.label == "CERTIFICATE REQUEST")
        .ok_or_else(|| "PEM block type must be CERTIFICATE REQUEST".to_string())?;
    let (_, csr) = X509CertificationRequest::from_der(&block.contents)
        .map_err(|e| format!("x509: malformed certificate request: {e}"))?;
    csr.verify_signature()
        .map_err(|e| format!("x509: certificate request signature verification failed: {e}"))
}

/// `validateCertificate` of `status.certificate`: empty, or only parseable `CERTIFICATE`
/// blocks.
///
/// kube refuses PEM headers inside a block ("no PEM block headers are permitted"); the PEM
/// reader used here does not parse headers, so a block with headers fails as malformed (its
/// base64 does not decode) and ends the list of blocks instead.
fn check_certificate(pem_data: &[u8]) -> Result<(), String> {
    if pem_data.is_empty() {
        return Ok(());
    }
    let mut blocks = 0;
    for block in Pem::iter_from_buffer(pem_data).map_while(Result::ok) {
        if block.label != "CERTIFICATE" {
            return Err(format!(
                "only CERTIFICATE PEM blocks are allowed, found {:?}",
                block.label
            ));
        }
        blocks += 1;
        if x509_parser::parse_x509_certificate(&block.contents).is_err() {
            return Err("x509: malformed certificate".to_string());
        }
    }
    if blocks == 0 {
        return Err("must contain at least one CERTIFICATE PEM block".to_string());
    }
    Ok(())
}

/// `ValidateSignerName` of core validation.
pub(crate) fn validate_signer_name(path: &str, signer: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if signer.is_empty() {
        errs.push(FieldError::required(path, ""));
        return errs;
    }
    let segments: Vec<&str> = signer.split('/').collect();
    let [domain, signer_path] = segments[..] else {
        errs.push(FieldError::invalid(
            path,
            &Value::from(signer),
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        ));
        return errs;
    };
    if domain.len() > 253 {
        errs.push(FieldError::too_long(path, 253));
    }
    let domain_labels: Vec<&str> = domain.split('.').collect();
    for label in &domain_labels {
        let label_errs = is_dns1123_label(label);
        if !label_errs.is_empty() {
            for m in label_errs {
                errs.push(FieldError::invalid(
                    path,
                    &Value::from(domain),
                    &format!("validating label {label:?}: {m}"),
                ));
            }
            break;
        }
    }
    if domain_labels.len() < 2 {
        errs.push(FieldError::invalid(
            path,
            &Value::from(domain),
            "should be a domain with at least two segments separated by dots",
        ));
    }
    for label in signer_path.split('.') {
        let label_errs = is_dns1123_subdomain(label);
        if !label_errs.is_empty() {
            for m in label_errs {
                errs.push(FieldError::invalid(
                    path,
                    &Value::from(signer_path),
                    &format!("validating label {label:?}: {m}"),
                ));
            }
            break;
        }
    }
    let max_path = 253 + 63 + 1;
    if signer_path.len() > max_path {
        errs.push(FieldError::too_long(path, max_path));
    }
    errs
}

/// What an update may get away with because the stored object already had it
/// (`getValidationOptions`), plus what the update path allows.
#[derive(Clone, Copy, Debug, Default)]
struct Options {
    allow_setting_approval_conditions: bool,
    allow_setting_certificate: bool,
    allow_both_approved_and_denied: bool,
    allow_legacy_signer_name: bool,
    allow_duplicate_condition_types: bool,
    allow_empty_condition_type: bool,
    allow_arbitrary_certificate: bool,
    allow_unknown_usages: bool,
    allow_duplicate_usages: bool,
}

fn conditions(obj: &Value) -> &[Value] {
    get(obj, &["status", "conditions"])
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn condition_type(c: &Value) -> &str {
    c.get("type").and_then(Value::as_str).unwrap_or("")
}

fn usages(obj: &Value) -> Vec<&str> {
    get(obj, &["spec", "usages"])
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|u| u.as_str().unwrap_or("")).collect())
        .unwrap_or_default()
}

fn has_duplicates<'a>(items: impl IntoIterator<Item = &'a str>) -> bool {
    let mut seen = BTreeSet::new();
    items.into_iter().any(|i| !seen.insert(i))
}

fn certificate(obj: &Value) -> Vec<u8> {
    bytes_of(obj, &["status", "certificate"]).unwrap_or_default()
}

/// `getValidationOptions`: tolerances for problems the stored object (`old`) already has.
fn options(new: &Value, old: Option<&Value>) -> Options {
    let Some(old) = old else {
        return Options::default();
    };
    let old_types: Vec<&str> = conditions(old).iter().map(condition_type).collect();
    Options {
        allow_both_approved_and_denied: old_types.contains(&"Approved")
            && old_types.contains(&"Denied"),
        allow_legacy_signer_name: get_str(old, &["spec", "signerName"])
            == Some(LEGACY_UNKNOWN_SIGNER),
        allow_duplicate_condition_types: has_duplicates(old_types.iter().copied()),
        allow_empty_condition_type: old_types.contains(&""),
        allow_arbitrary_certificate: certificate(new) == certificate(old)
            || check_certificate(&certificate(old)).is_err(),
        allow_unknown_usages: usages(old).iter().any(|u| !USAGES.contains(u)),
        allow_duplicate_usages: has_duplicates(usages(old)),
        ..Options::default()
    }
}

/// `validateCertificateSigningRequest` (after the metadata).
fn validate_with(obj: &Value, opts: Options) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let request = get(obj, &["spec", "request"]);
    let request_bytes = bytes_of(obj, &["spec", "request"]);
    let parsed = match (&request_bytes, request) {
        (Some(bytes), _) => check_request(bytes),
        (None, None | Some(Value::Null)) => check_request(&[]),
        (None, Some(_)) => Err("illegal base64 data".to_string()),
    };
    if let Err(e) = parsed {
        errs.push(FieldError {
            field: "spec.request".to_string(),
            kind: FieldErrorKind::Invalid,
            message: format!(
                "Invalid value: {}: {e}",
                render_bytes(request_bytes.as_deref().or(request.map(|_| &[][..])))
            ),
        });
    }
    let usage_list = usages(obj);
    if usage_list.is_empty() {
        errs.push(FieldError::required("spec.usages", ""));
    }
    if !opts.allow_unknown_usages {
        let mut supported = USAGES.to_vec();
        supported.sort_unstable();
        for (i, u) in usage_list.iter().enumerate() {
            if !USAGES.contains(u) {
                errs.push(FieldError::not_supported(
                    format!("spec.usages[{i}]"),
                    &Value::from(*u),
                    &supported,
                ));
            }
        }
    }
    if !opts.allow_duplicate_usages {
        let mut seen = BTreeSet::new();
        for (i, u) in usage_list.iter().enumerate() {
            if !seen.insert(*u) {
                errs.push(FieldError::duplicate(
                    format!("spec.usages[{i}]"),
                    &Value::from(*u),
                ));
            }
        }
    }
    let signer = get_str(obj, &["spec", "signerName"]).unwrap_or("");
    if !opts.allow_legacy_signer_name && signer == LEGACY_UNKNOWN_SIGNER {
        errs.push(FieldError::invalid(
            "spec.signerName",
            &Value::from(signer),
            "the legacy signerName is not allowed via this API version",
        ));
    } else {
        errs.extend(validate_signer_name("spec.signerName", signer));
    }
    if let Some(secs) = get(obj, &["spec", "expirationSeconds"]).and_then(Value::as_i64) {
        if secs < 600 {
            errs.push(FieldError::invalid(
                "spec.expirationSeconds",
                &Value::from(secs),
                "may not specify a duration less than 600 seconds (10 minutes)",
            ));
        }
    }
    errs.extend(validate_conditions(obj, opts));
    if !opts.allow_arbitrary_certificate {
        if let Err(e) = check_certificate(&certificate(obj)) {
            errs.push(FieldError::invalid(
                "status.certificate",
                &Value::from("<certificate data>"),
                &e,
            ));
        }
    }
    errs
}

/// `validateConditions` of a CSR's status.
fn validate_conditions(obj: &Value, opts: Options) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen = BTreeSet::new();
    let (mut approved, mut denied) = (false, false);
    for (i, c) in conditions(obj).iter().enumerate() {
        let path = format!("status.conditions[{i}]");
        let ty = condition_type(c);
        if !opts.allow_empty_condition_type && ty.is_empty() {
            errs.push(FieldError::required(format!("{path}.type"), ""));
        }
        let allowed: &[&str] = if TRUE_ONLY_TYPES.contains(&ty) {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        match c.get("status").and_then(Value::as_str).unwrap_or("") {
            "" => errs.push(FieldError::required(format!("{path}.status"), "")),
            s if !allowed.contains(&s) => errs.push(FieldError::not_supported(
                format!("{path}.status"),
                &Value::from(s),
                allowed,
            )),
            _ => {}
        }
        if !opts.allow_both_approved_and_denied {
            let clash = match ty {
                "Approved" => {
                    approved = true;
                    denied
                }
                "Denied" => {
                    denied = true;
                    approved
                }
                _ => false,
            };
            if clash {
                errs.push(FieldError::invalid(
                    format!("{path}.type"),
                    &Value::from(ty),
                    "Approved and Denied conditions are mutually exclusive",
                ));
            }
        }
        if !opts.allow_duplicate_condition_types && !seen.insert(ty) {
            errs.push(FieldError::duplicate(
                format!("{path}.type"),
                &Value::from(ty),
            ));
        }
    }
    errs
}

fn conditions_of_type<'a>(obj: &'a Value, ty: &str) -> Vec<&'a Value> {
    conditions(obj)
        .iter()
        .filter(|c| condition_type(c) == ty)
        .collect()
}

/// `validateCertificateSigningRequestUpdate` (after the metadata).
fn validate_update_with(new: &Value, old: &Value, opts: Options) -> Vec<FieldError> {
    let mut errs = validate_with(new, opts);
    for ty in TRUE_ONLY_TYPES {
        if conditions_of_type(new, ty).len() < conditions_of_type(old, ty).len() {
            errs.push(FieldError::forbidden(
                "status.conditions",
                &format!("updates may not remove a condition of type {ty:?}"),
            ));
        }
    }
    if !opts.allow_setting_approval_conditions {
        for ty in ["Approved", "Denied"] {
            let (old_c, new_c) = (conditions_of_type(old, ty), conditions_of_type(new, ty));
            if new_c.len() > old_c.len() {
                errs.push(FieldError::forbidden(
                    "status.conditions",
                    &format!("updates may not add a condition of type {ty:?}"),
                ));
            } else if new_c.len() == old_c.len()
                && !new_c
                    .iter()
                    .zip(&old_c)
                    .all(|(n, o)| semantically_equal(Some(n), Some(o)))
            {
                // kube appends a `cmp.Diff` of the conditions to this message.
                errs.push(FieldError::forbidden(
                    "status.conditions",
                    &format!("updates may not modify a condition of type {ty:?}"),
                ));
            }
        }
    }
    let (new_cert, old_cert) = (certificate(new), certificate(old));
    if new_cert != old_cert {
        if !opts.allow_setting_certificate {
            errs.push(FieldError::forbidden(
                "status.certificate",
                "updates may not set certificate content",
            ));
        } else if !old_cert.is_empty() {
            errs.push(FieldError::forbidden(
                "status.certificate",
                "updates may not modify existing certificate content",
            ));
        }
    }
    errs
}

/// `ValidateCertificateSigningRequestCreate` (after the metadata).
fn validate_create(obj: &Value) -> Vec<FieldError> {
    validate_with(obj, options(obj, None))
}

/// The update checks of the strategy, after a full or a `/status` update: those of
/// `ValidateCertificateSigningRequestStatusUpdate`. A full update keeps the stored status, so
/// the certificate it allows to be set cannot change there; both paths keep the stored
/// Approved/Denied conditions unless their number changed, which is refused either way.
fn validate_status_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let opts = Options {
        allow_setting_certificate: true,
        ..options(new, Some(old))
    };
    validate_update_with(new, old, opts)
}

/// `ValidateCertificateSigningRequestApprovalUpdate` (after the metadata), for `/approval`.
pub fn validate_approval_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let opts = Options {
        allow_setting_approval_conditions: true,
        ..options(new, Some(old))
    };
    validate_update_with(new, old, opts)
}

/// The strategy's `PrepareForCreate`: the requester's identity (the authenticated user of the
/// request, when there is one) replaces what the client sent, and the status starts empty (no
/// pre-approved requests).
fn prepare_create(obj: &mut Value) {
    set_requester(obj, rkcm_server::auth::request_user::current().as_ref());
    set(obj, &["status"], Some(json!({})));
}

/// Sets `spec.username`, `uid`, `groups` and `extra` to `user`'s, clearing what the client sent
/// (empty values are omitted, as Go's `omitempty` does).
fn set_requester(obj: &mut Value, user: Option<&rkcm_server::auth::UserInfo>) {
    for field in ["username", "uid", "groups", "extra"] {
        set(obj, &["spec", field], None);
    }
    let Some(user) = user else {
        return;
    };
    if !user.name.is_empty() {
        set(obj, &["spec", "username"], Some(json!(user.name)));
    }
    if !user.uid.is_empty() {
        set(obj, &["spec", "uid"], Some(json!(user.uid)));
    }
    if !user.groups.is_empty() {
        set(obj, &["spec", "groups"], Some(json!(user.groups)));
    }
    if !user.extra.is_empty() {
        set(obj, &["spec", "extra"], Some(json!(user.extra)));
    }
}

/// The strategy's `PrepareForUpdate`: neither spec nor status change.
fn prepare_update(new: &mut Value, old: &Value) {
    copy(new, old, &["spec"]);
    copy(new, old, &["status"]);
}

/// `preserveConditionInstances`: when the number of conditions of `ty` did not change, the
/// stored ones are put back in place of the new ones.
fn preserve_condition_instances(new: &mut Value, old: &Value, ty: &str) {
    let old_items = conditions_of_type(old, ty);
    let new_indices: Vec<usize> = conditions(new)
        .iter()
        .enumerate()
        .filter(|(_, c)| condition_type(c) == ty)
        .map(|(i, _)| i)
        .collect();
    if old_items.len() != new_indices.len() {
        return;
    }
    let old_items: Vec<Value> = old_items.into_iter().cloned().collect();
    if let Some(list) = object_mut(new, &["status"])
        .and_then(|s| s.get_mut("conditions"))
        .and_then(Value::as_array_mut)
    {
        for (i, o) in new_indices.into_iter().zip(old_items) {
            list[i] = o;
        }
    }
}

/// `populateConditionTimestamps`: conditions without `lastUpdateTime` get `now`; those
/// without `lastTransitionTime` get the stored one of the same type and status, else `now`.
fn populate_condition_timestamps(new: &mut Value, old: &Value, now: &str) {
    let old_conditions: Vec<Value> = conditions(old).to_vec();
    let Some(list) = object_mut(new, &["status"])
        .and_then(|s| s.get_mut("conditions"))
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    let unset = |m: &Map<String, Value>, k: &str| {
        m.get(k).and_then(Value::as_str).is_none_or(str::is_empty)
    };
    for c in list.iter_mut().filter_map(Value::as_object_mut) {
        if unset(c, "lastUpdateTime") {
            c.insert("lastUpdateTime".to_string(), Value::from(now));
        }
        if unset(c, "lastTransitionTime") {
            let same = old_conditions.iter().find(|o| {
                o.get("type") == c.get("type")
                    && o.get("status") == c.get("status")
                    && o.get("lastTransitionTime")
                        .and_then(Value::as_str)
                        .is_some_and(|t| !t.is_empty())
            });
            let at = same
                .and_then(|o| o.get("lastTransitionTime").cloned())
                .unwrap_or_else(|| Value::from(now));
            c.insert("lastTransitionTime".to_string(), at);
        }
    }
}

/// The status strategy's `PrepareForUpdate` at time `now` (RFC 3339): the spec is kept,
/// existing Approved/Denied conditions are preserved, timestamps filled.
pub fn prepare_for_status_update_at(new: &mut Value, old: &Value, now: &str) {
    copy(new, old, &["spec"]);
    preserve_condition_instances(new, old, "Approved");
    preserve_condition_instances(new, old, "Denied");
    populate_condition_timestamps(new, old, now);
}

/// The approval strategy's `PrepareForUpdate` at time `now` (RFC 3339), for `/approval`: only
/// the conditions change; metadata bookkeeping is the caller's, as for the other paths.
pub fn prepare_for_approval_update(new: &mut Value, old: &Value, now: &str) {
    let new_conditions = get(new, &["status", "conditions"]).cloned();
    copy(new, old, &["spec"]);
    copy(new, old, &["status"]);
    set(new, &["status", "conditions"], new_conditions);
    // kube's approval strategy assigns the new conditions to the old object before filling
    // timestamps, so a missing `lastTransitionTime` is looked up among the new conditions.
    let as_old = new.clone();
    populate_condition_timestamps(new, &as_old, now);
}

/// Prepares an update through `/approval` (`csrApprovalStrategy.PrepareForUpdate`): the
/// metadata kube keeps on every update, and only `status.conditions` taken from `new`.
pub fn prepare_for_approval(new: &mut Value, old: &Value) {
    super::generation::carry_over_meta(new, old);
    prepare_for_approval_update(new, old, &now());
}

/// Validates an update through `/approval` (`csrApprovalStrategy.ValidateUpdate`): the
/// metadata update, then the approval rules; an object that passes must decode as the
/// k8s-openapi type, as on every other write path.
pub fn validate_approval(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = super::meta::validate_object_meta_update(new, old);
    errs.extend(validate_approval_update(new, old));
    if errs.is_empty() {
        errs.extend(super::typecheck::decode_check::<
            k8s_openapi::api::certificates::v1::CertificateSigningRequest,
        >(new));
    }
    errs
}

/// The current time as kube writes `metav1.Time` (RFC 3339, seconds).
fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// The strategy of CertificateSigningRequests.
pub(crate) fn strategy(info: &'static ResourceInfo) -> HookedStrategy {
    HookedStrategy::new(
        GenericStrategy::new(info).with_name_validator(any_name),
        Hooks {
            prepare_create,
            prepare_update,
            prepare_status_update: |new, old| prepare_for_status_update_at(new, old, &now()),
            validate: validate_create,
            validate_update: validate_status_update,
            ..Hooks::NONE
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use rkcm_apimachinery::catalog;

    const NOW: &str = "2024-05-01T10:00:00Z";

    fn s() -> HookedStrategy {
        strategy(
            catalog::by_kind("certificates.k8s.io/v1", "CertificateSigningRequest")
                .expect("served"),
        )
    }

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// A signed PKCS#10 request and a self-signed certificate made for the test.
    fn request_and_certificate() -> (String, String) {
        let key = rcgen::KeyPair::generate().expect("key");
        let params = rcgen::CertificateParams::new(vec!["node-1".to_string()]).expect("params");
        let csr = params
            .serialize_request(&key)
            .expect("csr")
            .pem()
            .expect("pem");
        let cert = params.self_signed(&key).expect("cert").pem();
        (csr, cert)
    }

    fn csr(request_pem: &str) -> Value {
        json!({"metadata": {"name": "node-csr"},
            "spec": {"request": b64(request_pem.as_bytes()), "signerName": "example.com/signer",
                "usages": ["client auth"], "username": "mallory", "groups": ["system:masters"]},
            "status": {"conditions": [{"type": "Approved", "status": "True"}]}})
    }

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(FieldError::message_with_field).collect()
    }

    #[test]
    fn create_drops_the_clients_identity_and_status() {
        let (req, _) = request_and_certificate();
        let mut obj = csr(&req);
        s().default(&mut obj);
        s().prepare_for_create(&mut obj);
        assert_eq!(obj["status"], json!({}));
        assert!(obj["spec"].get("username").is_none());
        assert!(obj["spec"].get("groups").is_none());
        assert!(
            s().validate_create(&obj).is_empty(),
            "{:?}",
            s().validate_create(&obj)
        );
    }

    #[test]
    fn the_requester_is_the_user_of_the_request() {
        let (req, _) = request_and_certificate();
        let mut obj = csr(&req);
        let mut jane = rkcm_server::auth::UserInfo::new("jane", &["devs", "system:authenticated"]);
        jane.uid = "u-1".to_string();
        set_requester(&mut obj, Some(&jane));
        assert_eq!(obj["spec"]["username"], "jane");
        assert_eq!(obj["spec"]["uid"], "u-1");
        assert_eq!(
            obj["spec"]["groups"],
            json!(["devs", "system:authenticated"])
        );
        assert!(obj["spec"].get("extra").is_none());
    }

    #[test]
    fn approval_keeps_everything_but_the_conditions_and_checks_metadata() {
        let (req, cert) = request_and_certificate();
        let mut old = csr(&req);
        s().prepare_for_create(&mut old);
        old["metadata"]["uid"] = json!("uid-1");
        old["metadata"]["creationTimestamp"] = json!(NOW);
        let mut new = old.clone();
        new["metadata"]["uid"] = json!(null);
        new["metadata"]["labels"] = json!({"a": "b"});
        new["spec"]["signerName"] = json!("example.com/other");
        new["status"]["certificate"] = json!(b64(cert.as_bytes()));
        new["status"]["conditions"] =
            json!([{"type": "Approved", "status": "True", "reason": "KubectlApprove"}]);
        prepare_for_approval(&mut new, &old);
        assert_eq!(new["metadata"]["uid"], "uid-1");
        assert_eq!(new["metadata"]["labels"], json!({"a": "b"}));
        assert_eq!(new["spec"], old["spec"]);
        assert!(new["status"].get("certificate").is_none());
        assert_eq!(new["status"]["conditions"][0]["reason"], "KubectlApprove");
        assert!(validate_approval(&new, &old).is_empty());
        let mut renamed = new.clone();
        renamed["metadata"]["name"] = json!("other");
        assert_eq!(
            messages(&validate_approval(&renamed, &old)),
            ["metadata.name: Invalid value: \"other\": field is immutable"]
        );
    }

    /// Cases of `TestValidateCertificateSigningRequestCreate`.
    #[test]
    fn requests_must_be_signed_pem_certificate_requests() {
        let (req, cert) = request_and_certificate();
        let mut obj = csr(&req);
        s().prepare_for_create(&mut obj);
        let mut not_a_request = obj.clone();
        not_a_request["spec"]["request"] = json!(b64(cert.as_bytes()));
        let errs = s().validate_create(&not_a_request);
        assert_eq!(errs.len(), 1);
        assert!(errs[0]
            .message
            .ends_with(": PEM block type must be CERTIFICATE REQUEST"));
        assert!(errs[0]
            .message
            .starts_with("Invalid value: []byte{0x2d, 0x2d"));
        let mut tampered = obj.clone();
        let mut der = first_pem_block(req.as_bytes()).expect("pem").contents;
        let last = der.len() - 1;
        der[last] ^= 0xff;
        let pem = format!(
            "-----BEGIN CERTIFICATE REQUEST-----\n{}\n-----END CERTIFICATE REQUEST-----\n",
            b64(&der)
        );
        tampered["spec"]["request"] = json!(b64(pem.as_bytes()));
        assert_eq!(s().validate_create(&tampered)[0].field, "spec.request");
        let mut empty = obj.clone();
        set(&mut empty, &["spec", "request"], None);
        assert_eq!(
            messages(&s().validate_create(&empty)),
            ["spec.request: Invalid value: []byte(nil): PEM block type must be CERTIFICATE REQUEST"]
        );
    }

    #[test]
    fn usages_signer_and_expiration_follow_kubes_cases() {
        let (req, _) = request_and_certificate();
        let mut obj = csr(&req);
        s().prepare_for_create(&mut obj);
        obj["spec"]["usages"] = json!(["client auth", "bogus", "client auth"]);
        obj["spec"]["expirationSeconds"] = json!(599);
        obj["spec"]["signerName"] = json!("kubernetes.io/legacy-unknown");
        let errs = messages(&s().validate_create(&obj));
        assert!(errs[0].starts_with("spec.usages[1]: Unsupported value: \"bogus\": supported values: \"any\", \"cert sign\", \"client auth\""));
        assert_eq!(errs[1], "spec.usages[2]: Duplicate value: \"client auth\"");
        assert_eq!(
            errs[2],
            "spec.signerName: Invalid value: \"kubernetes.io/legacy-unknown\": the legacy signerName is not allowed via this API version"
        );
        assert_eq!(
            errs[3],
            "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 seconds (10 minutes)"
        );
        obj["spec"]["usages"] = json!([]);
        obj["spec"]["expirationSeconds"] = json!(600);
        obj["spec"]["signerName"] = json!("");
        assert_eq!(
            messages(&s().validate_create(&obj)),
            [
                "spec.usages: Required value",
                "spec.signerName: Required value"
            ]
        );
    }

    /// `TestValidateSignerName`.
    #[test]
    fn signer_names_are_a_domain_and_a_path() {
        assert!(validate_signer_name("spec.signerName", "example.com/valid-name").is_empty());
        assert!(
            validate_signer_name("spec.signerName", "kubernetes.io/kube-apiserver-client")
                .is_empty()
        );
        assert_eq!(
            messages(&validate_signer_name("spec.signerName", "example.com")),
            ["spec.signerName: Invalid value: \"example.com\": must be a fully qualified domain and path of the form 'example.com/signer-name'"]
        );
        assert_eq!(
            messages(&validate_signer_name("spec.signerName", "example/path")),
            ["spec.signerName: Invalid value: \"example\": should be a domain with at least two segments separated by dots"]
        );
        let errs = messages(&validate_signer_name("spec.signerName", "Example.com/x"));
        assert!(errs[0].starts_with("spec.signerName: Invalid value: \"Example.com\": validating label \"Example\": a lowercase RFC 1123 label"));
        let errs = messages(&validate_signer_name("spec.signerName", "example.com/a/b"));
        assert_eq!(errs.len(), 1);
    }

    /// `TestValidateCertificateSigningRequestStatusUpdate` / `...ApprovalUpdate` cases.
    #[test]
    fn approval_goes_through_approval_and_certificates_through_status() {
        let (req, cert) = request_and_certificate();
        let mut old = csr(&req);
        s().prepare_for_create(&mut old);

        // /status cannot add an Approved condition but may add others and the certificate.
        let mut approve = old.clone();
        approve["status"]["conditions"] =
            json!([{"type": "Approved", "status": "True", "reason": "AutoApproved"}]);
        s().prepare_for_status_update(&mut approve, &old);
        assert_eq!(
            messages(&s().validate_update(&approve, &old)),
            ["status.conditions: Forbidden: updates may not add a condition of type \"Approved\""]
        );
        let mut approved = old.clone();
        approved["status"]["conditions"] =
            json!([{"type": "Approved", "status": "True", "reason": "AutoApproved"}]);
        prepare_for_approval_update(&mut approved, &old, NOW);
        assert!(validate_approval_update(&approved, &old).is_empty());
        assert_eq!(approved["status"]["conditions"][0]["lastUpdateTime"], NOW);
        assert_eq!(
            approved["status"]["conditions"][0]["lastTransitionTime"],
            NOW
        );

        // /approval cannot deny an approved request, nor remove the approval.
        let mut both = approved.clone();
        both["status"]["conditions"]
            .as_array_mut()
            .expect("list")
            .push(json!({"type": "Denied", "status": "True"}));
        prepare_for_approval_update(&mut both, &approved, NOW);
        assert_eq!(
            messages(&validate_approval_update(&both, &approved)),
            ["status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive"]
        );
        let mut unapproved = approved.clone();
        unapproved["status"]["conditions"] = json!([]);
        prepare_for_approval_update(&mut unapproved, &approved, NOW);
        assert_eq!(
            messages(&validate_approval_update(&unapproved, &approved)),
            ["status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""]
        );

        // /status keeps the approval as stored, and sets the certificate once.
        let mut issued = approved.clone();
        issued["status"]["conditions"][0]["reason"] = json!("Changed");
        issued["status"]["certificate"] = json!(b64(cert.as_bytes()));
        prepare_for_status_update_at(&mut issued, &approved, NOW);
        assert_eq!(issued["status"]["conditions"][0]["reason"], "AutoApproved");
        assert!(s().validate_update(&issued, &approved).is_empty());
        let mut reissued = issued.clone();
        reissued["status"]["certificate"] = json!(b64(format!("{cert}{cert}").as_bytes()));
        prepare_for_status_update_at(&mut reissued, &issued, NOW);
        assert_eq!(
            messages(&s().validate_update(&reissued, &issued)),
            ["status.certificate: Forbidden: updates may not modify existing certificate content"]
        );
        let mut junk = approved.clone();
        junk["status"]["certificate"] = json!(b64(b"not a certificate"));
        prepare_for_status_update_at(&mut junk, &approved, NOW);
        assert_eq!(
            messages(&s().validate_update(&junk, &approved)),
            ["status.certificate: Invalid value: \"<certificate data>\": must contain at least one CERTIFICATE PEM block"]
        );

        // A full update changes neither spec nor status.
        let mut full = issued.clone();
        full["spec"]["signerName"] = json!("example.com/other");
        full["status"] = json!({});
        s().prepare_for_update(&mut full, &issued);
        assert_eq!(full["spec"], issued["spec"]);
        assert_eq!(full["status"], issued["status"]);
    }

    #[test]
    fn approval_conditions_may_only_be_true() {
        let (req, _) = request_and_certificate();
        let mut old = csr(&req);
        s().prepare_for_create(&mut old);
        let mut new = old.clone();
        new["status"]["conditions"] =
            json!([{"type": "Denied", "status": "False"}, {"type": "Custom"}]);
        prepare_for_approval_update(&mut new, &old, NOW);
        assert_eq!(
            messages(&validate_approval_update(&new, &old)),
            [
                "status.conditions[0].status: Unsupported value: \"False\": supported values: \"True\"",
                "status.conditions[1].status: Required value",
            ]
        );
    }
}
