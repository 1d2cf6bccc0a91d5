//! A bitmap of allocated offsets with kube's random scan, preferring the upper band.
//!
//! Mirrors `pkg/registry/core/service/allocator/bitmap.go` (`AllocationBitmap` with
//! `randomScanStrategyWithOffset`): dynamic allocations pick a random free offset in
//! `[offset, max)` first and only then in `[0, offset)`, so that the lower band stays free for
//! values clients ask for by number (KEP-3070 and KEP-3668).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Allocated offsets in `[0, max)`.
#[derive(Clone, Debug)]
pub struct AllocationBitmap {
    words: Vec<u64>,
    max: usize,
    count: usize,
    /// Size of the lower band kept for static allocations; 0 scans the whole range.
    offset: usize,
    rng: StdRng,
}

impl AllocationBitmap {
    /// An empty bitmap of `max` offsets whose first `offset` are tried last by
    /// [`AllocationBitmap::allocate_next`].
    pub fn new(max: usize, offset: usize) -> Self {
        Self::with_rng(max, offset, StdRng::from_os_rng())
    }

    /// As [`AllocationBitmap::new`] with a given random source (tests).
    pub fn with_rng(max: usize, offset: usize, rng: StdRng) -> Self {
        Self {
            words: vec![0; max.div_ceil(64)],
            max,
            count: 0,
            offset: offset.min(max),
            rng,
        }
    }

    /// Whether `at` is allocated (offsets out of range are not).
    pub fn has(&self, at: usize) -> bool {
        at < self.max && self.words[at / 64] & (1 << (at % 64)) != 0
    }

    /// Marks `at` allocated; `false` when it already was (or is out of range).
    pub fn allocate(&mut self, at: usize) -> bool {
        if at >= self.max || self.has(at) {
            return false;
        }
        self.words[at / 64] |= 1 << (at % 64);
        self.count += 1;
        true
    }

    /// Allocates a random free offset, upper band first; `None` when the range is full.
    pub fn allocate_next(&mut self) -> Option<usize> {
        if self.count >= self.max {
            return None;
        }
        let upper = self.max - self.offset;
        let found = self
            .scan(self.offset, upper)
            .or_else(|| self.scan(0, self.offset))?;
        self.allocate(found);
        Some(found)
    }

    /// The first free offset of `[start, start + len)` from a random point, wrapping.
    fn scan(&mut self, start: usize, len: usize) -> Option<usize> {
        if len == 0 {
            return None;
        }
        let from = self.rng.random_range(0..len);
        (0..len)
            .map(|i| start + (from + i) % len)
            .find(|&at| !self.has(at))
    }

    /// Frees `at`; freeing a free or out-of-range offset does nothing.
    pub fn release(&mut self, at: usize) {
        if self.has(at) {
            self.words[at / 64] &= !(1 << (at % 64));
            self.count -= 1;
        }
    }

    /// Offsets still free.
    pub fn free(&self) -> usize {
        self.max - self.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bitmap(max: usize, offset: usize) -> AllocationBitmap {
        AllocationBitmap::with_rng(max, offset, StdRng::seed_from_u64(7))
    }

    #[test]
    fn allocate_next_fills_the_range_then_reports_it_full() {
        // TestAllocate (bitmap_test.go): every offset once, then nothing.
        let mut m = bitmap(250, 0);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..250 {
            let at = m.allocate_next().expect("range not full yet");
            assert!(seen.insert(at), "offset {at} allocated twice");
        }
        assert_eq!(m.allocate_next(), None);
        assert_eq!(m.free(), 0);
        m.release(10);
        assert_eq!(m.allocate_next(), Some(10));
    }

    #[test]
    fn static_allocation_refuses_a_taken_offset_and_release_is_idempotent() {
        // TestAllocateMax / TestRelease.
        let mut m = bitmap(10, 0);
        assert!(m.allocate(3));
        assert!(!m.allocate(3));
        assert!(!m.allocate(10), "out of range");
        m.release(3);
        m.release(3);
        m.release(99);
        assert_eq!(m.free(), 10);
        assert!(m.allocate(3));
    }

    #[test]
    fn dynamic_allocation_takes_the_upper_band_before_the_lower() {
        // TestAllocateNextWithOffset: with offset 16 of 64, the first 48 come from [16, 64).
        let mut m = bitmap(64, 16);
        for _ in 0..48 {
            let at = m.allocate_next().expect("free");
            assert!(at >= 16, "{at} is in the reserved lower band");
        }
        for _ in 0..16 {
            assert!(m.allocate_next().expect("free") < 16);
        }
        assert_eq!(m.allocate_next(), None);
    }
}
