//! Resource names and quantities as core validation checks them in resource lists
//! (`validateResourceName`, `validateContainerResourceName`, `ValidateResourceQuotaResourceName`,
//! `ValidateResourceQuantityValue`, `ValidatePositiveQuantityValue` and the `helper` sets they
//! use).

use serde_json::{Map, Value};

use super::meta::is_qualified_name;
use super::{FieldError, FieldErrorKind};
use rkcm_apimachinery::quantity::{canonicalize_json_numbers, Quantity};

/// `standardResources` of `pkg/apis/core/helper`.
const STANDARD_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
    "configmaps",
];

/// `standardQuotaResources`.
const STANDARD_QUOTA_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
];

/// `standardContainerResources` (hugepages aside).
const STANDARD_CONTAINER_RESOURCES: &[&str] = &["cpu", "memory", "ephemeral-storage"];

/// `integerResources`: quota resources that count objects.
const INTEGER_RESOURCES: &[&str] = &[
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

/// `IsQuotaHugePageResourceName`.
fn is_quota_huge_page(name: &str) -> bool {
    name.starts_with("hugepages-") || name.starts_with("requests.hugepages-")
}

/// `IsStandardResourceName`.
fn is_standard_resource_name(name: &str) -> bool {
    STANDARD_RESOURCES.contains(&name) || is_quota_huge_page(name)
}

/// `IsStandardQuotaResourceName`.
pub(crate) fn is_standard_quota_resource_name(name: &str) -> bool {
    STANDARD_QUOTA_RESOURCES.contains(&name) || is_quota_huge_page(name)
}

/// `IsNativeResource`: no domain, or a `kubernetes.io/` one.
fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// `IsExtendedResourceName`.
fn is_extended_resource_name(name: &str) -> bool {
    if is_native_resource(name) || name.starts_with("requests.") {
        return false;
    }
    is_qualified_name(&format!("requests.{name}")).is_empty()
}

/// `IsIntegerResourceName`.
fn is_integer_resource_name(name: &str) -> bool {
    INTEGER_RESOURCES.contains(&name) || is_extended_resource_name(name)
}

/// `IsOverchargeAllowedResourceName`: only native resources other than hugepages may have a
/// request below their limit.
pub(crate) fn is_overcharge_allowed(name: &str) -> bool {
    is_native_resource(name) && !name.starts_with("hugepages-")
}

fn invalid_name(path: &str, name: &str, detail: &str) -> FieldError {
    FieldError::invalid(path, &Value::String(name.to_string()), detail)
}

/// `validateResourceName`: a qualified name, and a standard resource when it has no domain.
pub(crate) fn validate_resource_name(name: &str, path: &str) -> Vec<FieldError> {
    let errs: Vec<FieldError> = is_qualified_name(name)
        .iter()
        .map(|m| invalid_name(path, name, m))
        .collect();
    if !errs.is_empty() {
        return errs;
    }
    if !name.contains('/') && !is_standard_resource_name(name) {
        return vec![invalid_name(
            path,
            name,
            "must be a standard resource type or fully qualified",
        )];
    }
    errs
}

/// `validateContainerResourceName`.
pub(crate) fn validate_container_resource_name(name: &str, path: &str) -> Vec<FieldError> {
    let mut errs = validate_resource_name(name, path);
    if !name.contains('/') {
        if !STANDARD_CONTAINER_RESOURCES.contains(&name) && !name.starts_with("hugepages-") {
            errs.push(invalid_name(
                path,
                name,
                "must be a standard resource for containers",
            ));
        }
    } else if !is_native_resource(name) && !is_extended_resource_name(name) {
        errs.push(invalid_name(
            path,
            name,
            "doesn't follow extended resource name standard",
        ));
    }
    errs
}

/// `ValidateResourceQuotaResourceName`.
pub(crate) fn validate_quota_resource_name(name: &str, path: &str) -> Vec<FieldError> {
    let mut errs = validate_resource_name(name, path);
    if !name.contains('/') && !is_standard_quota_resource_name(name) {
        errs.push(invalid_name(
            path,
            name,
            "must be a standard resource for quota",
        ));
    }
    errs
}

/// The text of a quantity as it was sent (kube prints `Quantity.String()`, its canonical form;
/// the canonical form is only known once quantities are canonicalized on write).
pub(crate) fn quantity_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `field.Invalid` with a `resource.Quantity` as the bad value: kube prints it through its
/// `String()` method, unquoted.
pub(crate) fn invalid_quantity(path: impl Into<String>, q: &Value, detail: &str) -> FieldError {
    FieldError {
        field: path.into(),
        kind: FieldErrorKind::Invalid,
        message: format!("Invalid value: {}: {detail}", quantity_text(q)),
    }
}

/// `ValidateNonnegativeQuantity` and the integer check of `ValidateResourceQuantityValue`.
pub(crate) fn validate_quantity_value(name: &str, q: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Ok(quantity) = Quantity::from_json(q) else {
        // The type check reports quantities that do not parse.
        return errs;
    };
    if quantity.sign() < 0 {
        errs.push(FieldError::invalid(
            path,
            &Value::String(quantity_text(q)),
            "must be greater than or equal to 0",
        ));
    }
    // kube compares milli-values: `MilliValue() % 1000`.
    if is_integer_resource_name(name) && quantity.milli_value() % 1000 != 0 {
        errs.push(invalid_quantity(path, q, "must be an integer"));
    }
    errs
}

/// `validateBasicResource`: kube shows the value as whole units (`Value()`, rounded away from
/// zero).
pub(crate) fn validate_basic_resource(q: &Value, path: &str) -> Vec<FieldError> {
    match Quantity::from_json(q) {
        Ok(n) if n.sign() < 0 => {
            let units = n.value();
            vec![FieldError {
                field: path.to_string(),
                kind: FieldErrorKind::Invalid,
                message: format!("Invalid value: {units}: must be a valid resource quantity"),
            }]
        }
        _ => Vec::new(),
    }
}

/// `ValidatePositiveQuantityValue`.
pub(crate) fn validate_positive_quantity(q: &Value, path: &str) -> Vec<FieldError> {
    match Quantity::from_json(q) {
        Ok(n) if n.sign() <= 0 => vec![FieldError::invalid(
            path,
            &Value::String(quantity_text(q)),
            "must be greater than zero",
        )],
        _ => Vec::new(),
    }
}

/// `SetDefaults_ResourceList` on the resource list at `list`, if it is one: numbers become
/// quantity strings.
pub(crate) fn default_resource_list(list: Option<&mut Value>) {
    if let Some(m) = list.and_then(Value::as_object_mut) {
        canonicalize_json_numbers(m);
    }
}

/// The entries of the resource list `v` (empty when absent or not a map).
pub(crate) fn entries(v: Option<&Value>) -> impl Iterator<Item = (&String, &Value)> {
    v.and_then(Value::as_object)
        .map(Map::iter)
        .into_iter()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resource_names_are_standard_or_qualified() {
        assert!(validate_resource_name("cpu", "p").is_empty());
        assert!(validate_resource_name("example.com/gpu", "p").is_empty());
        assert_eq!(
            validate_resource_name("foo", "p")[0].message_with_field(),
            "p: Invalid value: \"foo\": must be a standard resource type or fully qualified"
        );
        assert_eq!(
            validate_container_resource_name("pods", "p")[0].message,
            "Invalid value: \"pods\": must be a standard resource for containers"
        );
        assert!(validate_container_resource_name("hugepages-2Mi", "p").is_empty());
        assert_eq!(
            validate_quota_resource_name("storage", "p")[0].message,
            "Invalid value: \"storage\": must be a standard resource for quota"
        );
        assert!(validate_quota_resource_name("count/deployments.apps", "p").is_empty());
    }

    #[test]
    fn quantities_must_be_nonnegative_and_integral_for_counted_resources() {
        assert_eq!(
            validate_quantity_value("cpu", &json!("-1"), "h")[0].message_with_field(),
            "h: Invalid value: \"-1\": must be greater than or equal to 0"
        );
        assert_eq!(
            validate_quantity_value("pods", &json!("1500m"), "h")[0].message_with_field(),
            "h: Invalid value: 1500m: must be an integer"
        );
        assert!(validate_quantity_value("cpu", &json!("1500m"), "h").is_empty());
        assert!(validate_quantity_value("example.com/gpu", &json!("2"), "h").is_empty());
        assert_eq!(
            validate_basic_resource(&json!("-1500m"), "c")[0].message_with_field(),
            // `Value()` rounds away from zero (`negativeScaleInt64`).
            "c: Invalid value: -2: must be a valid resource quantity"
        );
        assert!(validate_basic_resource(&json!("0"), "c").is_empty());
        assert_eq!(
            validate_positive_quantity(&json!("0"), "s")[0].message,
            "Invalid value: \"0\": must be greater than zero"
        );
    }
}
