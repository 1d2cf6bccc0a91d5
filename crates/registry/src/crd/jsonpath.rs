//! The simple JSONPaths CRDs use (`.spec.replicas`, `.status.conditions[0].type`) for printer
//! columns, the scale subresource and selectable fields, evaluated over JSON objects.
//!
//! kube evaluates printer columns with client-go's full JSONPath; filters and wildcards are
//! not supported here, and such a column prints as `<none>` would (an empty cell).

use serde_json::Value;

/// One step of a path.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    Field(String),
    Index(usize),
}

fn parse(path: &str) -> Option<Vec<Step>> {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path);
    let path = path.strip_prefix('.')?;
    let mut steps = Vec::new();
    for part in path.split('.') {
        let (name, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if name.is_empty() && rest.is_empty() {
            return None;
        }
        if !name.is_empty() {
            steps.push(Step::Field(name.to_string()));
        }
        while let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let index = &r[..end];
            if let Some(key) = index
                .strip_prefix('\'')
                .and_then(|k| k.strip_suffix('\''))
                .or_else(|| index.strip_prefix('"').and_then(|k| k.strip_suffix('"')))
            {
                steps.push(Step::Field(key.to_string()));
            } else {
                steps.push(Step::Index(index.parse().ok()?));
            }
            rest = &r[end + 1..];
        }
    }
    Some(steps)
}

/// The value at `path` in `obj`, if the path is simple and present.
pub fn get<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = obj;
    for step in parse(path)? {
        cur = match step {
            Step::Field(f) => cur.get(f.as_str())?,
            Step::Index(i) => cur.get(i)?,
        };
    }
    Some(cur)
}

/// Sets the value at `path` (fields only), creating the objects on the way.
pub fn set(obj: &mut Value, path: &str, value: Value) -> bool {
    let Some(steps) = parse(path) else {
        return false;
    };
    let mut cur = obj;
    for (i, step) in steps.iter().enumerate() {
        let Step::Field(f) = step else {
            return false;
        };
        if !cur.is_object() {
            *cur = Value::Object(serde_json::Map::new());
        }
        let Some(map) = cur.as_object_mut() else {
            return false;
        };
        if i + 1 == steps.len() {
            map.insert(f.clone(), value);
            return true;
        }
        cur = map
            .entry(f.clone())
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
    }
    false
}

/// `.spec.color` → `spec.color`, the field name a field selector uses.
pub fn field_name(path: &str) -> String {
    path.trim().trim_start_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn simple_paths_are_read_and_written() {
        let mut obj = json!({"spec": {"replicas": 3, "list": [{"a": 1}]}});
        assert_eq!(get(&obj, ".spec.replicas"), Some(&json!(3)));
        assert_eq!(get(&obj, ".spec.list[0].a"), Some(&json!(1)));
        assert_eq!(get(&obj, ".spec['replicas']"), Some(&json!(3)));
        assert_eq!(get(&obj, ".spec.missing"), None);
        assert_eq!(get(&obj, ".status.conditions[?(@.type==\"Ready\")]"), None);
        assert!(set(&mut obj, ".status.replicas", json!(2)));
        assert_eq!(obj["status"]["replicas"], json!(2));
        assert_eq!(field_name(".spec.color"), "spec.color");
    }
}
