//! Label sets written as literal pairs, as apimachinery's `labels.Set{"app": "web"}`.

use std::collections::BTreeMap;

/// The label set holding `pairs`; a later pair wins over an earlier one with the same key.
pub fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_pair_wins_over_an_earlier_one_with_the_same_key() {
        let s = set(&[("app", "web"), ("tier", "front"), ("app", "api")]);
        assert_eq!(s.len(), 2);
        assert_eq!(s.get("app").map(String::as_str), Some("api"));
        assert_eq!(s.get("tier").map(String::as_str), Some("front"));
    }
}
