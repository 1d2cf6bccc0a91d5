//! kube-openapi's `SchemaValidator` over a CRD's `JSONSchemaProps`, and kube's conversion of its results into
//! field errors.

use std::collections::HashMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use regex::Regex;
use serde_json::{Map, Number, Value};

use super::ratcheting::{correlate_item, ratchet_equal};
use super::{formats, pattern};
use crate::field::{BadValue, ErrorList, FieldError, Path};
use crate::go_format;

/// Validates values against one CRD version's OpenAPI v3 schema, as kube's custom-resource handler does before
/// storing an object. Patterns are compiled once, when the validator is built; the validator is immutable and
/// can be shared between threads.
#[derive(Debug)]
pub struct SchemaValidator {
    schema: JSONSchemaProps,
    patterns: HashMap<String, Result<Regex, String>>,
}

/// What kube-openapi's error code makes of an error in kube's conversion to field errors.
#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Required,
    Enum(Vec<Value>),
    TooLong(i64),
    TooMany {
        actual: i64,
        max: i64,
    },
    InvalidType,
    Other,
    /// An error of the junctors (`anyOf` …), reported at the caller's root.
    Composite,
}

#[derive(Clone, Debug)]
struct OpenApiError {
    kind: Kind,
    /// The value path kube-openapi reports (`spec.replicas`, `.spec` for a required root field).
    name: String,
    value: Option<Value>,
    message: String,
}

/// kube-openapi's `validate.Result`: errors de-duplicated by message, and a match count that picks the closest
/// alternative of an `anyOf`/`oneOf`.
#[derive(Default)]
struct Outcome {
    errors: Vec<OpenApiError>,
    match_count: usize,
}

impl Outcome {
    fn add(&mut self, e: OpenApiError) {
        if !self.errors.iter().any(|x| x.message == e.message) {
            self.errors.push(e);
        }
    }

    fn merge(&mut self, other: Outcome) {
        for e in other.errors {
            self.add(e);
        }
        self.match_count += other.match_count;
    }

    fn error(e: OpenApiError) -> Outcome {
        Outcome {
            errors: vec![e],
            match_count: 0,
        }
    }

    fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }
}

fn err(kind: Kind, name: &str, value: Option<Value>, message: String) -> OpenApiError {
    OpenApiError {
        kind,
        name: name.to_string(),
        value,
        message,
    }
}

/// `name in body`, or just the rest of the message at the root as kube-openapi prints it.
fn in_body(name: &str) -> String {
    format!("{name} in body")
}

/// The JSON type kube-openapi sees in a decoded value.
fn sch_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_json_integer(f: f64) -> bool {
    if !f.is_finite() {
        return false;
    }
    let g = f.round();
    f == g || (f - g).abs() / (f.abs() + g.abs()).min(f64::MAX) < 1e-9
}

fn types_of(s: &JSONSchemaProps) -> Vec<&str> {
    if s.x_kubernetes_int_or_string == Some(true) {
        return vec!["integer", "string"];
    }
    match s.type_.as_deref() {
        Some(t) if !t.is_empty() => vec![t],
        _ => Vec::new(),
    }
}

impl SchemaValidator {
    /// A validator for `schema` (a CRD version's `openAPIV3Schema`).
    pub fn new(schema: &JSONSchemaProps) -> Self {
        let mut patterns = HashMap::new();
        collect_patterns(schema, &mut patterns);
        SchemaValidator {
            schema: schema.clone(),
            patterns,
        }
    }

    /// Validates a whole object as kube's custom-resource handler does (`ValidateCustomResource(nil, …)`).
    ///
    /// Field paths are relative to the object (`spec.replicas`). Errors of `anyOf`, `oneOf`, `allOf` and `not`
    /// name no field in kube, which prints the missing path as `<nil>`; so does this.
    pub fn validate(&self, value: &Value) -> ErrorList {
        self.to_field_errors(None, self.validate_node(&self.schema, value, None, ""))
    }

    /// Validates `value` and reports the errors below `path` (kube's `ValidateCustomResource(path, …)`).
    pub fn validate_at(&self, path: &Path, value: &Value) -> ErrorList {
        self.to_field_errors(
            Some(path),
            self.validate_node(&self.schema, value, None, ""),
        )
    }

    /// Validates an update of `old` to `value` with validation ratcheting (kube's `ValidateUpdate`,
    /// CRDValidationRatcheting): errors found in a part of the object that the update left unchanged are not
    /// reported. Parts are correlated with the old object by field name, by index, and by key for
    /// `x-kubernetes-list-type: map` lists; items of `set` and `atomic` lists are never correlated.
    pub fn validate_update(&self, value: &Value, old: &Value) -> ErrorList {
        self.to_field_errors(None, self.validate_node(&self.schema, value, Some(old), ""))
    }

    /// kube's `kubeOpenAPIResultToFieldErrors`.
    fn to_field_errors(&self, root: Option<&Path>, outcome: Outcome) -> ErrorList {
        let root_path = || root.cloned().unwrap_or_else(|| Path::new("<nil>"));
        outcome
            .errors
            .into_iter()
            .map(|e| {
                let path = if e.kind == Kind::Composite || e.name.is_empty() || e.name == "." {
                    root_path()
                } else {
                    let name = e.name.strip_prefix('.').unwrap_or(&e.name);
                    match root {
                        Some(r) => r.child(name),
                        None => Path::new(name),
                    }
                };
                let value = || {
                    BadValue::Json(
                        e.value
                            .clone()
                            .unwrap_or_else(|| Value::String(String::new())),
                    )
                };
                match e.kind {
                    Kind::Required => FieldError::required(&path, ""),
                    Kind::Enum(values) => {
                        let values: Vec<String> = values
                            .iter()
                            .map(|v| match v {
                                Value::String(s) => s.clone(),
                                other => other.to_string(),
                            })
                            .collect();
                        FieldError::not_supported(
                            &path,
                            BadValue::Json(e.value.unwrap_or(Value::Null)),
                            &values,
                        )
                    }
                    Kind::TooLong(max) => FieldError::too_long(&path, max),
                    Kind::TooMany { actual, max } => FieldError::too_many(&path, actual, max),
                    Kind::InvalidType => FieldError::type_invalid(&path, value(), e.message),
                    Kind::Other | Kind::Composite => FieldError::invalid(&path, value(), e.message),
                }
            })
            .collect()
    }

    /// `SchemaValidator.Validate`: runs the type, junctor, string, format, number, array, enum and object
    /// validators that apply, in kube-openapi's order.
    fn validate_node(
        &self,
        s: &JSONSchemaProps,
        data: &Value,
        old: Option<&Value>,
        path: &str,
    ) -> Outcome {
        let mut result = self.validate_node_unratcheted(s, data, old, path);
        // Ratcheting: errors of a value the update did not change are dropped (kube keeps them as warnings).
        if let Some(old) = old {
            if !result.is_valid() && ratchet_equal(old, data, Some(s)) {
                result.errors.clear();
            }
        }
        result
    }

    fn validate_node_unratcheted(
        &self,
        s: &JSONSchemaProps,
        data: &Value,
        old: Option<&Value>,
        path: &str,
    ) -> Outcome {
        let mut result = Outcome::default();
        let types = types_of(s);
        let format = formats::supported_format(s.format.as_deref().unwrap_or(""));
        let type_applies = !types.is_empty() || !format.is_empty();
        if data.is_null() {
            if type_applies {
                result.merge(self.validate_type(s, &types, format, data, path));
            }
            result.merge(validate_enum(s, data, path));
            return result;
        }
        if type_applies {
            result.merge(self.validate_type(s, &types, format, data, path));
            result.match_count += 1;
        }
        result.merge(self.validate_junctors(s, data, old, path));
        result.match_count += 1;
        if let Value::String(str_value) = data {
            result.merge(self.validate_string(s, str_value, path));
            result.match_count += 1;
            if !format.is_empty() && formats::is_known(format) {
                if !formats::validates(format, str_value) {
                    result.add(err(
                        Kind::InvalidType,
                        path,
                        Some(data.clone()),
                        format!(
                            "{} must be of type {format}: {}",
                            in_body(path),
                            go_format::quote(str_value)
                        ),
                    ));
                }
                result.match_count += 1;
            }
        }
        if let Value::Number(n) = data {
            result.merge(validate_number(s, n, path));
            result.match_count += 1;
        }
        if let Value::Array(items) = data {
            result.merge(self.validate_array(s, items, old, path));
            result.match_count += 1;
        }
        result.merge(validate_enum(s, data, path));
        result.match_count += 1;
        if let Value::Object(map) = data {
            result.merge(self.validate_object(s, map, old, path));
            result.match_count += 1;
        }
        result.match_count += 1;
        result
    }

    /// kube-openapi's `typeValidator`.
    fn validate_type(
        &self,
        s: &JSONSchemaProps,
        types: &[&str],
        format: &str,
        data: &Value,
        path: &str,
    ) -> Outcome {
        let type_name = types.join(",");
        if data.is_null() {
            if !types.is_empty() && !types.contains(&"null") && s.nullable != Some(true) {
                return Outcome::error(err(
                    Kind::InvalidType,
                    path,
                    Some(Value::String("null".into())),
                    format!("{} must be of type {type_name}: \"null\"", in_body(path)),
                ));
            }
            return Outcome::default();
        }
        let sch = sch_type(data);
        // Decoded JSON numbers are int64 or float64, so the data's format is int64 or float64.
        let data_format = match sch {
            "integer" => "int64",
            "number" => "float64",
            _ => "",
        };
        let contains = |t: &str| types.contains(&t);
        let is_float_int =
            sch == "number" && data.as_f64().is_some_and(is_json_integer) && contains("integer");
        let is_int_float = sch == "integer" && contains("number");
        let is_lower_int = format == "int64" && data_format == "int32";
        let is_lower_float = format == "float64" && data_format == "float32";
        let is_string_or_slice = matches!(data, Value::String(_) | Value::Array(_));
        if !is_string_or_slice
            && !format.is_empty()
            && !(contains(sch)
                || data_format == format
                || is_float_int
                || is_int_float
                || is_lower_int
                || is_lower_float)
        {
            return Outcome::error(err(
                Kind::InvalidType,
                path,
                Some(Value::String(data_format.into())),
                format!(
                    "{} must be of type {format}: {}",
                    in_body(path),
                    go_format::quote(data_format)
                ),
            ));
        }
        if !contains("number") && !contains("integer") && !format.is_empty() && is_string_or_slice {
            return Outcome {
                errors: Vec::new(),
                match_count: 1,
            };
        }
        if !(contains(sch) || is_float_int || is_int_float) {
            return Outcome::error(err(
                Kind::InvalidType,
                path,
                Some(Value::String(sch.into())),
                format!(
                    "{} must be of type {type_name}: {}",
                    in_body(path),
                    go_format::quote(sch)
                ),
            ));
        }
        Outcome {
            errors: Vec::new(),
            match_count: 1,
        }
    }

    /// kube-openapi's `schemaPropsValidator`: `anyOf`, `oneOf`, `allOf` and `not`.
    fn validate_junctors(
        &self,
        s: &JSONSchemaProps,
        data: &Value,
        old: Option<&Value>,
        path: &str,
    ) -> Outcome {
        let mut main = Outcome::default();
        let quoted = go_format::quote(path);
        let composite = |message: String| err(Kind::Composite, path, None, message);

        if let Some(any_of) = s.any_of.as_ref().filter(|a| !a.is_empty()) {
            let mut best: Option<Outcome> = None;
            let mut first_success: Option<Outcome> = None;
            for sub in any_of {
                let r = self.validate_node(sub, data, old, path);
                if r.is_valid() {
                    best = None;
                    first_success = Some(r);
                    break;
                }
                if best.as_ref().is_none_or(|b| r.match_count > b.match_count) {
                    best = Some(r);
                }
            }
            if first_success.is_none() {
                main.add(composite(format!(
                    "{quoted} must validate at least one schema (anyOf)"
                )));
            }
            if let Some(b) = best {
                main.merge(b);
            } else if let Some(f) = first_success {
                main.merge(f);
            }
        }

        if let Some(one_of) = s.one_of.as_ref().filter(|a| !a.is_empty()) {
            let mut best: Option<Outcome> = None;
            let mut first_success: Option<Outcome> = None;
            let mut validated = 0;
            for sub in one_of {
                let r = self.validate_node(sub, data, old, path);
                if r.is_valid() {
                    validated += 1;
                    best = None;
                    if first_success.is_none() {
                        first_success = Some(r);
                    }
                    continue;
                }
                if validated == 0 && best.as_ref().is_none_or(|b| r.match_count > b.match_count) {
                    best = Some(r);
                }
            }
            if validated != 1 {
                let additional = if validated == 0 {
                    "Found none valid".to_string()
                } else {
                    format!("Found {validated} valid alternatives")
                };
                main.add(composite(format!(
                    "{quoted} must validate one and only one schema (oneOf). {additional}"
                )));
                if let Some(b) = best {
                    main.merge(b);
                }
            } else if let Some(f) = first_success {
                main.merge(f);
            }
        }

        if let Some(all_of) = s.all_of.as_ref().filter(|a| !a.is_empty()) {
            let mut validated = 0;
            for sub in all_of {
                let r = self.validate_node(sub, data, old, path);
                if r.is_valid() {
                    validated += 1;
                }
                main.merge(r);
            }
            if validated != all_of.len() {
                let additional = if validated == 0 {
                    ". None validated"
                } else {
                    ""
                };
                main.add(composite(format!(
                    "{quoted} must validate all the schemas (allOf){additional}"
                )));
            }
        }

        if let Some(not) = &s.not {
            if self.validate_node(not, data, old, path).is_valid() {
                main.add(composite(format!(
                    "{quoted} must not validate the schema (not)"
                )));
            }
        }

        main.match_count += 1;
        main
    }

    /// kube-openapi's `stringValidator`: stops at the first failure of maxLength, minLength, pattern.
    fn validate_string(&self, s: &JSONSchemaProps, data: &str, path: &str) -> Outcome {
        let len = data.chars().count() as i64;
        let value = Some(Value::String(data.to_string()));
        if let Some(max) = s.max_length {
            if len > max {
                return Outcome::error(err(
                    Kind::TooLong(max),
                    path,
                    value,
                    format!("{} should be at most {max} chars long", in_body(path)),
                ));
            }
        }
        if let Some(min) = s.min_length {
            if len < min {
                return Outcome::error(err(
                    Kind::Other,
                    path,
                    value,
                    format!("{} should be at least {min} chars long", in_body(path)),
                ));
            }
        }
        if let Some(p) = s.pattern.as_deref().filter(|p| !p.is_empty()) {
            match self.patterns.get(p) {
                Some(Ok(re)) if !re.is_match(data) => {
                    return Outcome::error(err(
                        Kind::Other,
                        path,
                        value,
                        format!("{} should match '{p}'", in_body(path)),
                    ));
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    return Outcome::error(err(
                        Kind::Other,
                        path,
                        value,
                        format!(
                            "{} should match '{p}, but pattern is invalid: {e}'",
                            in_body(path)
                        ),
                    ));
                }
                None => {}
            }
        }
        Outcome::default()
    }

    /// kube-openapi's `schemaSliceValidator`.
    fn validate_array(
        &self,
        s: &JSONSchemaProps,
        items: &[Value],
        old: Option<&Value>,
        path: &str,
    ) -> Outcome {
        let mut result = Outcome::default();
        match &s.items {
            Some(JSONSchemaPropsOrArray::Schema(item)) => {
                for (i, v) in items.iter().enumerate() {
                    let old_item = old.and_then(|o| correlate_item(s, o, v, i));
                    result.merge(self.validate_node(item, v, old_item, &format!("{path}[{i}]")));
                }
            }
            Some(JSONSchemaPropsOrArray::Schemas(schemas)) => {
                for (i, (sub, v)) in schemas.iter().zip(items).enumerate() {
                    let old_item = old.and_then(|o| correlate_item(s, o, v, i));
                    result.merge(self.validate_node(sub, v, old_item, &format!("{path}[{i}]")));
                }
            }
            None => {}
        }
        let size = items.len() as i64;
        if let Some(min) = s.min_items {
            if size < min {
                result.add(err(
                    Kind::Other,
                    path,
                    Some(Value::from(size)),
                    format!("{} should have at least {min} items", in_body(path)),
                ));
            }
        }
        if let Some(max) = s.max_items {
            if size > max {
                result.add(err(
                    Kind::TooMany { actual: size, max },
                    path,
                    Some(Value::from(size)),
                    format!("{} should have at most {max} items", in_body(path)),
                ));
            }
        }
        if s.unique_items == Some(true) {
            let duplicate = items
                .iter()
                .enumerate()
                .any(|(i, v)| items[..i].contains(v));
            if duplicate {
                result.add(err(
                    Kind::Other,
                    path,
                    None,
                    format!("{} shouldn't contain duplicates", in_body(path)),
                ));
            }
        }
        result.match_count += 1;
        result
    }

    /// kube-openapi's `objectValidator`.
    fn validate_object(
        &self,
        s: &JSONSchemaProps,
        map: &Map<String, Value>,
        old: Option<&Value>,
        path: &str,
    ) -> Outcome {
        let old_field = |k: &str| old.and_then(|o| o.as_object()).and_then(|o| o.get(k));
        let mut result = Outcome::default();
        let num_keys = map.len() as i64;
        if let Some(min) = s.min_properties {
            if num_keys < min {
                result.add(err(
                    Kind::Other,
                    path,
                    Some(Value::from(num_keys)),
                    format!("{} should have at least {min} properties", in_body(path)),
                ));
            }
        }
        if let Some(max) = s.max_properties {
            if num_keys > max {
                result.add(err(
                    Kind::TooMany {
                        actual: num_keys,
                        max,
                    },
                    path,
                    Some(Value::from(num_keys)),
                    format!("{} should have at most {max} properties", in_body(path)),
                ));
            }
        }
        let properties = s.properties.as_ref();
        let is_property = |k: &str| properties.is_some_and(|p| p.contains_key(k));
        match &s.additional_properties {
            Some(JSONSchemaPropsOrBool::Bool(false)) => {
                for k in map.keys().filter(|k| !is_property(k)) {
                    result.add(err(
                        Kind::Other,
                        path,
                        Some(Value::String(k.clone())),
                        format!("{path}.{k} in body is a forbidden property"),
                    ));
                }
            }
            Some(JSONSchemaPropsOrBool::Schema(additional)) => {
                for (k, v) in map.iter().filter(|(k, _)| !is_property(k)) {
                    result.merge(self.validate_node(
                        additional,
                        v,
                        old_field(k),
                        &format!("{path}.{k}"),
                    ));
                }
            }
            _ => {}
        }
        for (name, prop) in properties.into_iter().flatten() {
            if let Some(v) = map.get(name) {
                let child = if path.is_empty() {
                    name.clone()
                } else {
                    format!("{path}.{name}")
                };
                result.merge(self.validate_node(prop, v, old_field(name), &child));
            }
        }
        for k in s.required.iter().flatten() {
            if !map.contains_key(k) {
                let name = format!("{path}.{k}");
                let message = format!("{} is required", in_body(&name));
                result.add(err(Kind::Required, &name, None, message));
            }
        }
        result
    }
}

/// kube-openapi's `numberValidator`: multipleOf, minimum, maximum, compared in the data's own type (an integer
/// with the bound truncated to an integer).
///
/// The kube-openapi that Kubernetes 1.33 vendors gives this validator no type or format, so its range checks of
/// values and bounds against int32/int64/float never fail; newer kube-openapi releases check them.
fn validate_number(s: &JSONSchemaProps, n: &Number, path: &str) -> Outcome {
    let mut multiple = Outcome::default();
    let mut minimum = Outcome::default();
    let mut maximum = Outcome::default();
    let value = Some(Value::Number(n.clone()));
    let as_int = n.as_i64();
    let as_float = n.as_f64().unwrap_or(0.0);
    let body = in_body(path);

    if let Some(factor) = s.multiple_of {
        match as_int {
            Some(i) => {
                // Go converts the factor to the data's int64 type.
                let f = factor as i64;
                if f <= 0 {
                    multiple.add(err(
                        Kind::Other,
                        path,
                        Some(Value::from(f)),
                        format!("factor MultipleOf declared for {path} must be positive: {f}"),
                    ));
                } else if (i / f) * f != i {
                    multiple.add(err(
                        Kind::Other,
                        path,
                        value.clone(),
                        format!("{body} should be a multiple of {f}"),
                    ));
                }
            }
            None => {
                if factor <= 0.0 {
                    multiple.add(err(
                        Kind::Other,
                        path,
                        Number::from_f64(factor).map(Value::Number),
                        format!(
                            "factor MultipleOf declared for {path} must be positive: {}",
                            go_format::float(factor)
                        ),
                    ));
                } else {
                    let mult = if factor < 1.0 {
                        1.0 / factor * as_float
                    } else {
                        as_float / factor
                    };
                    if !is_json_integer(mult) {
                        multiple.add(err(
                            Kind::Other,
                            path,
                            value.clone(),
                            format!(
                                "{body} should be a multiple of {}",
                                go_format::float(factor)
                            ),
                        ));
                    }
                }
            }
        }
    }

    if let Some(min) = s.minimum {
        let exclusive = s.exclusive_minimum == Some(true);
        let (failed, shown) = match as_int {
            Some(i) => {
                let m = min as i64;
                (
                    (!exclusive && i < m) || (exclusive && i <= m),
                    m.to_string(),
                )
            }
            None => (
                (!exclusive && as_float < min) || (exclusive && as_float <= min),
                go_format::float(min),
            ),
        };
        if failed {
            let op = if exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            minimum.add(err(
                Kind::Other,
                path,
                value.clone(),
                format!("{body} should be {op} {shown}"),
            ));
        }
    }

    if let Some(max) = s.maximum {
        let exclusive = s.exclusive_maximum == Some(true);
        let (failed, shown) = match as_int {
            Some(i) => {
                let m = max as i64;
                (
                    (!exclusive && i > m) || (exclusive && i >= m),
                    m.to_string(),
                )
            }
            None => (
                (!exclusive && as_float > max) || (exclusive && as_float >= max),
                go_format::float(max),
            ),
        };
        if failed {
            let op = if exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            maximum.add(err(
                Kind::Other,
                path,
                value.clone(),
                format!("{body} should be {op} {shown}"),
            ));
        }
    }

    let mut res = Outcome::default();
    res.merge(multiple);
    res.merge(minimum);
    res.merge(maximum);
    res.match_count += 1;
    res
}

/// kube-openapi's `basicCommonValidator`: `enum`, matched after Go's conversion of the data to each value's type.
fn validate_enum(s: &JSONSchemaProps, data: &Value, path: &str) -> Outcome {
    let Some(values) = s.enum_.as_ref().filter(|e| !e.is_empty()) else {
        return Outcome::default();
    };
    let values: Vec<Value> = values.iter().map(|v| v.0.clone()).collect();
    if values.iter().any(|e| enum_matches(data, e)) {
        return Outcome::default();
    }
    let listed: Vec<String> = values.iter().map(go_v).collect();
    Outcome::error(err(
        Kind::Enum(values.clone()),
        path,
        Some(data.clone()),
        format!("{} should be one of [{}]", in_body(path), listed.join(" ")),
    ))
}

/// Go's `%v` of a decoded JSON value, as in `should be one of [a b]`.
fn go_v(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::String(s) => s.clone(),
        Value::Number(n) => go_format::number(n),
        Value::Bool(b) => b.to_string(),
        Value::Array(a) => format!("[{}]", a.iter().map(go_v).collect::<Vec<_>>().join(" ")),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            format!(
                "map[{}]",
                keys.iter()
                    .map(|k| format!("{k}:{}", go_v(&m[k.as_str()])))
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        }
    }
}

/// `reflect.DeepEqual(reflect.ValueOf(data).Convert(typeOf(enumValue)), enumValue)` for decoded JSON values.
fn enum_matches(data: &Value, e: &Value) -> bool {
    match (data, e) {
        (Value::Null, _) | (_, Value::Null) => false,
        (Value::Number(d), Value::Number(en)) => match (d.as_i64(), en.as_i64()) {
            // int64 → int64, float64 → int64 (truncating), int64 → float64, float64 → float64
            (_, Some(ei)) => d.as_i64().or_else(|| d.as_f64().map(|f| f as i64)) == Some(ei),
            (_, None) => d.as_f64() == en.as_f64(),
        },
        // Go converts an integer to a string as the rune it encodes.
        (Value::Number(d), Value::String(es)) => d
            .as_i64()
            .map(|i| {
                u32::try_from(i)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{FFFD}')
                    .to_string()
            })
            .is_some_and(|s| &s == es),
        _ => data == e,
    }
}

fn collect_patterns(s: &JSONSchemaProps, out: &mut HashMap<String, Result<Regex, String>>) {
    if let Some(p) = s.pattern.as_deref().filter(|p| !p.is_empty()) {
        out.entry(p.to_string())
            .or_insert_with(|| pattern::compile(p).map_err(|e| e.to_string()));
    }
    for sub in s.properties.iter().flat_map(|m| m.values()) {
        collect_patterns(sub, out);
    }
    for list in [&s.all_of, &s.any_of, &s.one_of] {
        for sub in list.iter().flatten() {
            collect_patterns(sub, out);
        }
    }
    if let Some(n) = &s.not {
        collect_patterns(n, out);
    }
    match &s.items {
        Some(JSONSchemaPropsOrArray::Schema(i)) => collect_patterns(i, out),
        Some(JSONSchemaPropsOrArray::Schemas(list)) => {
            list.iter().for_each(|i| collect_patterns(i, out))
        }
        None => {}
    }
    if let Some(JSONSchemaPropsOrBool::Schema(a)) = &s.additional_properties {
        collect_patterns(a, out);
    }
}

#[cfg(test)]
mod tests;
