//! Strict decoding (`fieldValidation`): unknown and duplicate fields of a body refused, warned
//! of or ignored, and unknown fields dropped from the object as kube's decoder drops them.

use serde_json::Value;

use rkcm_apimachinery::catalog::ResourceInfo;
use rkcm_apimachinery::validation;

use crate::error::{ApiError, ApiResult, Cause};
use crate::http::params::Params;
use crate::rest::Resources;

/// `fieldValidation`: unknown and duplicate fields are an error (`Strict`), warnings (`Warn`,
/// the default) or ignored (`Ignore`).
pub fn field_validation(params: &Params) -> ApiResult<&str> {
    let mode = params.non_empty("fieldValidation").unwrap_or("Warn");
    if !matches!(mode, "Strict" | "Warn" | "Ignore") {
        return Err(ApiError::bad_request(format!(
            "fieldValidation parameter unsupported: {mode:?}; supported values: \"Ignore\", \"Warn\", \"Strict\""
        )));
    }
    Ok(mode)
}

/// What strict decoding found in a body.
#[derive(Default)]
pub struct FieldCheck {
    /// `Warning` headers to send (`Warn` mode).
    pub warnings: Vec<String>,
    /// Paths of unknown fields, dropped from the object as kube's decoder drops them.
    pub unknown: Vec<String>,
}

/// Checks `body`, a request body holding an object of `info`, and `obj`, the object parsed from
/// it, for unknown and duplicate fields according to `mode`.
pub fn check_fields(
    resources: &dyn Resources,
    info: &ResourceInfo,
    body: &[u8],
    obj: &Value,
    mode: &str,
    decoding: Decoding<'_>,
) -> ApiResult<FieldCheck> {
    let problems = validation::check_fields(&info.api_version(), info.kind, body)
        .map_err(|e| ApiError::bad_request(format!("error decoding request body: {e}")))?;
    conclude(resources, info, obj, Some(body), problems, mode, decoding)
}

/// [`check_fields`] of `patched`, the object a patch made, checked as parsed (it has no
/// duplicate keys): it is serialized only for the error of `Strict`.
pub fn check_patched_fields(
    resources: &dyn Resources,
    info: &ResourceInfo,
    patched: &Value,
    mode: &str,
    decoding: Decoding<'_>,
) -> ApiResult<FieldCheck> {
    let problems = validation::check_value_fields(&info.api_version(), info.kind, patched)
        .map_err(|e| ApiError::bad_request(format!("error decoding request body: {e}")))?;
    conclude(resources, info, patched, None, problems, mode, decoding)
}

/// Adds the problems of the schema `obj` is served with to those of its built-in type, then
/// refuses them (`Strict`: the error shows `body`, or `obj` serialized when there is none) or
/// returns the warnings (`Warn`) and the unknown fields to drop.
fn conclude(
    resources: &dyn Resources,
    info: &ResourceInfo,
    obj: &Value,
    body: Option<&[u8]>,
    mut problems: Vec<validation::FieldProblem>,
    mode: &str,
    decoding: Decoding<'_>,
) -> ApiResult<FieldCheck> {
    problems.extend(resources.schema_field_problems(info, obj)?);
    if problems.is_empty() {
        return Ok(FieldCheck::default());
    }
    if mode == "Strict" {
        let encoded;
        let body = match body {
            Some(body) => body,
            None => {
                encoded = serde_json::to_vec(obj)
                    .map_err(|e| ApiError::internal("encoding the patched object", e))?;
                &encoded
            }
        };
        return Err(strict_error(
            info,
            body,
            &validation::strict_decoding_message(&problems),
            decoding,
        ));
    }
    let unknown = problems
        .iter()
        .filter_map(|p| match p {
            validation::FieldProblem::Unknown(path) => Some(path.clone()),
            validation::FieldProblem::Duplicate(_) => None,
        })
        .collect();
    let warnings = if mode == "Warn" {
        problems.iter().map(ToString::to_string).collect()
    } else {
        Vec::new()
    };
    Ok(FieldCheck { warnings, unknown })
}

/// What the checked body is, which decides how kube words a strict decoding error.
#[derive(Clone, Copy, Debug)]
pub enum Decoding<'a> {
    /// The body of a create or update (`transformDecodeError` in `handlers/create.go` and
    /// `handlers/update.go`).
    Object,
    /// The object a JSON or merge patch made (`jsonPatcher.applyPatchToCurrentObject`).
    Patched,
    /// The object a strategic merge patch made; kube shows the patch itself
    /// (`applyPatchToObject`).
    StrategicPatch(&'a [u8]),
}

/// The error of a body that strict decoding refused, `strict` being the decoder's
/// `strict decoding error: …`.
fn strict_error(
    info: &ResourceInfo,
    body: &[u8],
    strict: &str,
    decoding: Decoding<'_>,
) -> ApiError {
    match decoding {
        Decoding::Object => {
            // The kind and version decoded from the body (defaulted from the path when it
            // names none), then the kind the handler expects.
            let typed: Option<Value> = serde_json::from_slice(body).ok();
            let field = |f: &str| {
                typed
                    .as_ref()
                    .and_then(|v| v.get(f))
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
            };
            let kind = field("kind").unwrap_or_else(|| info.kind.to_string());
            let version = field("apiVersion")
                .map(|av| av.rsplit('/').next().unwrap_or_default().to_string())
                .unwrap_or_else(|| info.version.to_string());
            ApiError::bad_request(format!(
                "{kind} in version {version:?} cannot be handled as a {}: {strict}",
                info.kind
            ))
        }
        Decoding::Patched => patch_invalid(&go_quote(&String::from_utf8_lossy(body)), strict),
        Decoding::StrategicPatch(patch) => {
            let patch: Value = serde_json::from_slice(patch).unwrap_or(Value::Null);
            patch_invalid(&go_quote(&go_value(&patch)), strict)
        }
    }
}

/// `errors.NewInvalid(schema.GroupKind{}, "", field.Invalid(field.NewPath("patch"), …))`: a
/// 422 with neither kind nor name, `"" is invalid: patch: Invalid value: …`.
fn patch_invalid(quoted: &str, strict: &str) -> ApiError {
    let body = format!("Invalid value: {quoted}: {strict}");
    let mut e = ApiError::new(422, "Invalid", format!(" \"\" is invalid: patch: {body}"));
    e.details.causes = vec![Cause {
        reason: "FieldValueInvalid".into(),
        message: body,
        field: "patch".into(),
    }];
    e
}

/// `s` as Go's `%q` writes it (`strconv.Quote`).
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A float64 as Go's `%v` prints it (`strconv` `'g'`, shortest): exponent form when the decimal
/// exponent is below -4 or at least 6 (`1e+06`, `1.5e-05`), plain digits otherwise (`123456`,
/// `0.25`).
fn go_float(f: f64) -> String {
    let scientific = format!("{f:e}");
    let Some((mantissa, exponent)) = scientific.split_once('e') else {
        return scientific;
    };
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if f != 0.0 && !(-4..6).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        f.to_string()
    }
}

/// A decoded JSON value as Go's `%+v` prints the `map[string]interface{}` it decodes into:
/// `map[data:map[a:1] kind:ConfigMap]`, keys sorted, strings bare, null as `<nil>`.
fn go_value(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        // Numbers decode into float64, which `%v` prints as `%g` with the shortest precision.
        Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), go_float),
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(go_value).collect();
            format!("[{}]", items.join(" "))
        }
        Value::Object(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let entries: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| format!("{k}:{}", go_value(v)))
                .collect();
            format!("map[{}]", entries.join(" "))
        }
    }
}

/// Removes the field at `path` (`spec.template.spec.containers[0].imagee`) from `obj`.
pub fn remove_path(obj: &mut Value, path: &str) {
    let mut segments: Vec<(String, Vec<usize>)> = Vec::new();
    for seg in path.split('.') {
        let (name, rest) = seg.split_once('[').map_or((seg, ""), |(n, r)| (n, r));
        let indexes = rest
            .split('[')
            .filter_map(|i| i.trim_end_matches(']').parse().ok())
            .collect();
        segments.push((name.to_string(), indexes));
    }
    let Some(((last, last_idx), parents)) = segments.split_last() else {
        return;
    };
    if !last_idx.is_empty() {
        return;
    }
    let mut cur = obj;
    for (name, indexes) in parents {
        let Some(next) = cur.get_mut(name.as_str()) else {
            return;
        };
        cur = next;
        for i in indexes {
            let Some(next) = cur.get_mut(*i) else { return };
            cur = next;
        }
    }
    if let Some(m) = cur.as_object_mut() {
        m.remove(last);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn floats_print_as_gos_percent_v() {
        for (f, go) in [
            (0.0, "0"),
            (1.0, "1"),
            (123456.0, "123456"),
            (1e6, "1e+06"),
            (1234567.0, "1.234567e+06"),
            (-2.5e21, "-2.5e+21"),
            (0.25, "0.25"),
            (0.0001, "0.0001"),
            (0.000015, "1.5e-05"),
        ] {
            assert_eq!(go_float(f), go, "{f}");
        }
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn quoting_escapes_as_strconv_quote() {
        assert_eq!(
            go_quote("a\"b\\c\n\r\t\u{7}\u{8}\u{c}\u{b}\u{1}\u{7f}é"),
            r#""a\"b\\c\n\r\t\a\b\f\v\x01\x7fé""#
        );
    }

    /// Built-in kinds only: strict decoding of them asks nothing of the API served.
    struct BuiltIn;

    impl Resources for BuiltIn {
        fn strategy(&self, _info: &ResourceInfo) -> &'static dyn crate::rest::Strategy {
            unreachable!("strict decoding asks for no strategy")
        }
    }

    fn configmaps() -> &'static ResourceInfo {
        rkcm_apimachinery::catalog::by_plural("", "v1", "configmaps").expect("served")
    }

    #[test]
    fn strict_create_and_update_errors_name_the_kind_and_version_as_transform_decode_error() {
        let body = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"bogus":1}"#;
        let obj: Value = serde_json::from_slice(body).unwrap();
        let Err(e) = check_fields(
            &BuiltIn,
            configmaps(),
            body,
            &obj,
            "Strict",
            Decoding::Object,
        ) else {
            panic!("an unknown field is refused");
        };
        assert_eq!(e.code, 400);
        assert_eq!(e.reason, "BadRequest");
        assert_eq!(
            e.message,
            r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "bogus""#
        );
        // A body without apiVersion and kind is decoded as the kind of the path.
        let Err(e) = check_fields(
            &BuiltIn,
            configmaps(),
            br#"{"bogus":1}"#,
            &json!({"bogus": 1}),
            "Strict",
            Decoding::Object,
        ) else {
            panic!("an unknown field is refused");
        };
        assert!(
            e.message.starts_with(r#"ConfigMap in version "v1" cannot"#),
            "{}",
            e.message
        );
    }

    #[test]
    fn strict_patch_errors_are_invalid_patches_showing_what_kube_shows() {
        let patched = br#"{"apiVersion":"v1","bogus":1,"kind":"ConfigMap"}"#;
        let value: Value = serde_json::from_slice(patched).unwrap();
        let Err(e) =
            check_patched_fields(&BuiltIn, configmaps(), &value, "Strict", Decoding::Patched)
        else {
            panic!("an unknown field is refused");
        };
        let Err(from_text) = check_fields(
            &BuiltIn,
            configmaps(),
            patched,
            &value,
            "Strict",
            Decoding::Patched,
        ) else {
            panic!("an unknown field is refused");
        };
        assert_eq!(e.message, from_text.message);
        assert_eq!(e.code, 422);
        assert_eq!(e.reason, "Invalid");
        assert_eq!(
            e.message,
            r#" "" is invalid: patch: Invalid value: "{\"apiVersion\":\"v1\",\"bogus\":1,\"kind\":\"ConfigMap\"}": strict decoding error: unknown field "bogus""#
        );
        assert_eq!(e.details.causes[0].field, "patch");
        assert_eq!(e.details.causes[0].reason, "FieldValueInvalid");
        let patch = br#"{"bogus":1,"data":{"a":"b"},"x":[true,null,1.5]}"#;
        let Err(e) = check_patched_fields(
            &BuiltIn,
            configmaps(),
            &value,
            "Strict",
            Decoding::StrategicPatch(patch),
        ) else {
            panic!("an unknown field is refused");
        };
        assert_eq!(
            e.message,
            r#" "" is invalid: patch: Invalid value: "map[bogus:1 data:map[a:b] x:[true <nil> 1.5]]": strict decoding error: unknown field "bogus""#
        );
    }

    #[test]
    fn a_warned_patch_names_and_drops_the_unknown_fields_of_the_patched_object() {
        let patched =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "bogus": 1, "data": {"a": "b"}});
        let check =
            check_patched_fields(&BuiltIn, configmaps(), &patched, "Warn", Decoding::Patched)
                .unwrap();
        assert_eq!(check.warnings, [r#"unknown field "bogus""#]);
        assert_eq!(check.unknown, ["bogus"]);
        let ignored = check_patched_fields(
            &BuiltIn,
            configmaps(),
            &patched,
            "Ignore",
            Decoding::Patched,
        )
        .unwrap();
        assert!(ignored.warnings.is_empty());
        assert_eq!(ignored.unknown, ["bogus"]);
    }

    #[test]
    fn unknown_fields_are_removed_by_path() {
        let mut obj = json!({"spec": {"foo": 1, "template": {"spec": {"containers": [{"name": "c", "imagee": "x"}]}}}});
        remove_path(&mut obj, "spec.foo");
        remove_path(&mut obj, "spec.template.spec.containers[0].imagee");
        remove_path(&mut obj, "spec.missing.deeper");
        assert_eq!(
            obj,
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}})
        );
    }
}
