//! kube's `cliflag.WordSepNormalizeFunc`: kube-controller-manager reads `_` in a flag's name as
//! `-` (`--concurrent_rc_syncs=10` is `--concurrent-rc-syncs=10`); values are left alone.

use std::ffi::OsString;

/// The command line with `_` replaced by `-` in the names of long flags.
pub fn normalize_flag_names(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    args.into_iter()
        .map(|arg| match arg.to_str() {
            Some(s) if s.starts_with("--") && s.len() > 2 => {
                let (name, value) = match s.split_once('=') {
                    Some((name, value)) => (name, Some(value)),
                    None => (s, None),
                };
                let name = name.replace('_', "-");
                OsString::from(match value {
                    Some(value) => format!("{name}={value}"),
                    None => name,
                })
            }
            _ => arg,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn underscores_in_flag_names_become_dashes_values_are_kept() {
        let args = [
            "rkcm",
            "--concurrent_rc_syncs=10",
            "--cluster_name",
            "a_b",
            "--x=a_b",
            "-v=2",
        ];
        let normalized: Vec<String> = normalize_flag_names(args.iter().map(OsString::from))
            .into_iter()
            .map(|a| a.into_string().expect("utf-8"))
            .collect();
        assert_eq!(
            normalized,
            [
                "rkcm",
                "--concurrent-rc-syncs=10",
                "--cluster-name",
                "a_b",
                "--x=a_b",
                "-v=2"
            ]
        );
    }
}
