//! A small deterministic pseudo-random generator (xorshift64) for the self-test and for
//! test data: the same seed gives the same data on every machine.

/// Marsaglia's xorshift64: fast, tiny, and good enough to vary test data; not for
/// anything that needs statistical quality or secrecy.
#[derive(Debug, Clone)]
pub struct XorShift64(u64);

impl XorShift64 {
    /// A generator from `seed` (any value; zero is avoided internally).
    pub fn new(seed: u64) -> Self {
        Self(seed | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_sequence() {
        let (mut a, mut b) = (XorShift64::new(9), XorShift64::new(9));
        let first: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        assert_eq!(first, (0..4).map(|_| b.next_u64()).collect::<Vec<_>>());
        assert!(first.windows(2).all(|w| w[0] != w[1]));
        assert_ne!(XorShift64::new(0).next_u64(), 0);
    }
}
