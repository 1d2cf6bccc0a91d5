//! Shuffle sharding: a flow's hand of queues, dealt from its hash
//! (`staging/src/k8s.io/apiserver/pkg/util/shufflesharding/shufflesharding.go`).

/// The most bits of a hash a deal may use (`MaxHashBits`).
pub const MAX_HASH_BITS: u32 = 60;

/// Why a deck and hand size cannot be dealt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DealerError {
    /// The deck or the hand is empty, or the hand is larger than the deck.
    #[error("deckSize {deck} and handSize {hand} must be positive, with handSize <= deckSize")]
    Sizes {
        /// Cards in the deck (queues).
        deck: usize,
        /// Cards in a hand.
        hand: usize,
    },
    /// More entropy is needed than a hash holds.
    #[error("required entropy bits of deckSize {deck} and handSize {hand} should not be more than {MAX_HASH_BITS}")]
    Entropy {
        /// Cards in the deck (queues).
        deck: usize,
        /// Cards in a hand.
        hand: usize,
    },
}

/// Deals hands of `hand_size` distinct cards out of `0..deck_size` (kube's `Dealer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dealer {
    deck_size: usize,
    hand_size: usize,
}

/// `ceil(log2(deck_size) * hand_size)`: the bits a deal consumes (`RequiredEntropyBits`).
pub fn required_entropy_bits(deck_size: usize, hand_size: usize) -> u32 {
    ((deck_size as f64).log2() * hand_size as f64).ceil() as u32
}

impl Dealer {
    /// A dealer for `deck_size` cards and hands of `hand_size` (`NewDealer`).
    pub fn new(deck_size: usize, hand_size: usize) -> Result<Self, DealerError> {
        if deck_size == 0 || hand_size == 0 || hand_size > deck_size {
            return Err(DealerError::Sizes {
                deck: deck_size,
                hand: hand_size,
            });
        }
        if deck_size > 1 << 26 || required_entropy_bits(deck_size, hand_size) > MAX_HASH_BITS {
            return Err(DealerError::Entropy {
                deck: deck_size,
                hand: hand_size,
            });
        }
        Ok(Self {
            deck_size,
            hand_size,
        })
    }

    /// Cards in a hand.
    pub fn hand_size(&self) -> usize {
        self.hand_size
    }

    /// Deals the hand of `hash_value`, calling `pick` with each card (`Deal`): each remainder
    /// picks among the cards not dealt yet, so the cards are distinct.
    pub fn deal(&self, mut hash_value: u64, mut pick: impl FnMut(usize)) {
        // At most 60 bits of entropy: a hand of more than 60 cards needs a deck of one.
        let mut remainders = [0usize; 64];
        let hand = self.hand_size.min(remainders.len());
        for (i, remainder) in remainders.iter_mut().enumerate().take(hand) {
            let base = (self.deck_size - i) as u64;
            *remainder = (hash_value % base) as usize;
            hash_value /= base;
        }
        for i in 0..hand {
            let mut card = remainders[i];
            for j in (0..i).rev() {
                if card >= remainders[j] {
                    card += 1;
                }
            }
            pick(card);
        }
    }

    /// Deals the hand of `hash_value` into `hand`, which it returns cut to the hand's size
    /// (`DealIntoHand`).
    pub fn deal_into_hand<'h>(&self, hash_value: u64, hand: &'h mut [usize]) -> &'h [usize] {
        let mut n = 0;
        self.deal(hash_value, |card| {
            if let Some(slot) = hand.get_mut(n) {
                *slot = card;
                n += 1;
            }
        });
        &hand[..n]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_entropy_bits_are_kubes() {
        // shufflesharding_test.go: TestRequiredEntropyBits.
        for (deck, hand, bits) in [(128, 6, 42), (256, 7, 56), (512, 6, 54), (512, 8, 72)] {
            assert_eq!(required_entropy_bits(deck, hand), bits, "{deck}/{hand}");
        }
    }

    #[test]
    fn new_dealer_checks_its_sizes() {
        // shufflesharding_test.go: TestNewDealer.
        assert!(Dealer::new(128, 6).is_ok());
        assert!(Dealer::new(256, 8).is_err(), "64 bits of entropy");
        assert!(Dealer::new(0, 6).is_err());
        assert!(Dealer::new(128, 0).is_err());
        assert!(Dealer::new(4, 8).is_err(), "hand larger than the deck");
        assert!(Dealer::new(1 << 26, 2).is_ok());
        assert!(Dealer::new(1 << 26, 3).is_err());
    }

    #[test]
    fn a_hand_is_distinct_cards_of_the_deck() {
        // shufflesharding_test.go: TestCardDuplication, over a few deck and hand sizes.
        for (deck, hand) in [(1, 1), (8, 8), (64, 6), (128, 6), (512, 5), (1 << 20, 3)] {
            let dealer = Dealer::new(deck, hand).expect("valid sizes");
            for hash in [0u64, 1, 42, 0xdead_beef, u64::MAX >> 4, u64::MAX] {
                let mut buf = [0usize; 16];
                let cards = dealer.deal_into_hand(hash, &mut buf).to_vec();
                assert_eq!(cards.len(), hand);
                let mut sorted = cards.clone();
                sorted.sort_unstable();
                sorted.dedup();
                assert_eq!(sorted.len(), hand, "duplicates in {cards:?}");
                assert!(cards.iter().all(|&c| c < deck));
            }
        }
    }

    #[test]
    fn deals_match_kubes_algorithm() {
        // Deal(hash 0): every remainder 0, each card is the lowest one not dealt yet.
        let dealer = Dealer::new(128, 8).expect("valid sizes");
        let mut buf = [0usize; 8];
        assert_eq!(dealer.deal_into_hand(0, &mut buf), [0, 1, 2, 3, 4, 5, 6, 7]);
        // hash = 5 + 7*10 with deck 10, hand 2: remainders 5 then 7 → cards 5 and 8.
        let dealer = Dealer::new(10, 2).expect("valid sizes");
        let mut buf = [0usize; 2];
        assert_eq!(dealer.deal_into_hand(5 + 7 * 10, &mut buf), [5, 8]);
        // Remainders 7 then 5 → cards 7 and 5 (5 is below 7, not shifted).
        assert_eq!(dealer.deal_into_hand(7 + 5 * 10, &mut buf), [7, 5]);
    }

    #[test]
    fn deals_are_uniform() {
        // shufflesharding_test.go: TestUniformDistribution, smaller.
        let (deck, hand) = (16, 3);
        let dealer = Dealer::new(deck, hand).expect("valid sizes");
        let mut counts = vec![0u32; deck];
        let mut buf = [0usize; 3];
        let n = 16_000u64;
        for i in 0..n {
            let hash = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            for &card in dealer.deal_into_hand(hash, &mut buf) {
                counts[card] += 1;
            }
        }
        let expected = (n as usize * hand / deck) as f64;
        for (card, &c) in counts.iter().enumerate() {
            let off = (c as f64 - expected).abs() / expected;
            assert!(
                off < 0.1,
                "card {card} dealt {c} times, expected about {expected}"
            );
        }
    }
}
