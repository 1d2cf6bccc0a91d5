//! FNV-32a and apimachinery's `rand.SafeEncodeString`: the primitives behind the hashes kube puts
//! in object names (the pod-template-hash, ControllerRevision names).

/// Alphabet of apimachinery's `rand.SafeEncodeString`: no vowels, no confusable characters.
pub const SAFE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

const FNV32_OFFSET: u32 = 0x811c_9dc5;
const FNV32_PRIME: u32 = 0x0100_0193;

/// A running FNV-1a 32-bit hash, as Go's `hash/fnv.New32a()` (kube's `controller.ComputeHash`).
#[doc(alias = "New32a")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fnv32a(u32);

impl Fnv32a {
    /// A hash of no bytes (the offset basis).
    pub fn new() -> Self {
        Self(FNV32_OFFSET)
    }

    /// Mixes `bytes` into the hash.
    pub fn write(&mut self, bytes: &[u8]) {
        self.0 = bytes
            .iter()
            .fold(self.0, |h, &b| (h ^ u32::from(b)).wrapping_mul(FNV32_PRIME));
    }

    /// The hash of everything written so far.
    pub fn sum32(&self) -> u32 {
        self.0
    }
}

impl Default for Fnv32a {
    fn default() -> Self {
        Self::new()
    }
}

/// A running FNV-1 32-bit hash, as Go's `hash/fnv.New32()` (kube's `HashControllerRevision`):
/// multiply, then xor, where FNV-1a xors first.
#[doc(alias = "New32")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fnv32(u32);

impl Fnv32 {
    /// A hash of no bytes (the offset basis).
    pub fn new() -> Self {
        Self(FNV32_OFFSET)
    }

    /// Mixes `bytes` into the hash.
    pub fn write(&mut self, bytes: &[u8]) {
        self.0 = bytes
            .iter()
            .fold(self.0, |h, &b| h.wrapping_mul(FNV32_PRIME) ^ u32::from(b));
    }

    /// The hash of everything written so far.
    pub fn sum32(&self) -> u32 {
        self.0
    }
}

impl Default for Fnv32 {
    fn default() -> Self {
        Self::new()
    }
}

/// Maps every character of `s` into the safe alphabet, as `rand.SafeEncodeString` does.
#[doc(alias = "SafeEncodeString")]
pub fn safe_encode_string(s: &str) -> String {
    s.chars()
        .map(|c| char::from(SAFE_ALPHABET[(c as usize) % SAFE_ALPHABET.len()]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_encoding_maps_digits_as_apimachinery_does() {
        // '0' is 48, 48 % 27 = 21 → '4'; '9' is 57, 57 % 27 = 3 → 'f'.
        assert_eq!(safe_encode_string("09"), "4f");
    }

    #[test]
    fn fnv32a_matches_the_reference_values() {
        assert_eq!(Fnv32a::new().sum32(), 0x811c_9dc5);
        let mut h = Fnv32a::new();
        h.write(b"a");
        assert_eq!(h.sum32(), 0xe40c_292c);
        let mut split = Fnv32a::new();
        split.write(b"foo");
        split.write(b"bar");
        let mut whole = Fnv32a::new();
        whole.write(b"foobar");
        assert_eq!(split, whole);
        assert_eq!(whole.sum32(), 0xbf9c_f968);
    }

    #[test]
    fn fnv32_matches_the_reference_values() {
        assert_eq!(Fnv32::new().sum32(), 0x811c_9dc5);
        let mut h = Fnv32::new();
        h.write(b"a");
        assert_eq!(h.sum32(), 0x050c_5d7e);
        let mut h = Fnv32::new();
        h.write(b"foobar");
        assert_eq!(h.sum32(), 0x31f0_b262);
    }
}
