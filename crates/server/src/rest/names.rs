//! Generated names (`generateName`), as `names.SimpleNameGenerator`.

use rand::Rng;

/// Attempts at a free name for `generateName` before giving up (kube's `RetryGenerateName`).
pub const GENERATE_NAME_ATTEMPTS: usize = 8;

/// Random suffix as `names.SimpleNameGenerator`: 5 characters of `bcdfghjklmnpqrstvwxz2456789`.
pub fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..5)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_suffixes_use_the_kube_alphabet() {
        let s = random_suffix();
        assert_eq!(s.len(), 5);
        assert!(s.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
    }
}
