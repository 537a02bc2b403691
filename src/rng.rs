//! The crate's one pseudo-random generator, SplitMix64: the loader's shuffles and the
//! synthetic dataset draw from it. It is fixed here, so that a seed gives the same epoch
//! order and the same synthetic data on every machine and in every version of this crate.

/// A small, fast, portable pseudo-random generator (SplitMix64).
///
/// # Example
/// ```
/// use lodtensor::rng::SplitMix64;
/// let (mut a, mut b) = (SplitMix64::new(7), SplitMix64::new(7));
/// assert_eq!(a.next_u64(), b.next_u64());                        // the same on every machine
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    ///
    /// # Example
    /// ```
    /// use lodtensor::rng::SplitMix64;
    /// assert_ne!(SplitMix64::new(1).next_u64(), SplitMix64::new(2).next_u64());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    ///
    /// # Example
    /// ```
    /// use lodtensor::rng::SplitMix64;
    /// let mut rng = SplitMix64::new(0);
    /// assert_ne!(rng.next_u64(), rng.next_u64());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform integer in `lo..=hi` (`lo <= hi`).
    ///
    /// # Example
    /// ```
    /// use lodtensor::rng::SplitMix64;
    /// let mut rng = SplitMix64::new(3);
    /// assert!((0..100).all(|_| (5..=9).contains(&rng.range(5, 9))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }

    /// A uniform float in `[-1, 1)`.
    ///
    /// # Example
    /// ```
    /// use lodtensor::rng::SplitMix64;
    /// let mut rng = SplitMix64::new(3);
    /// assert!((0..100).all(|_| (-1.0..1.0).contains(&rng.unit())));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

#[cfg(test)]
mod tests {
    use super::SplitMix64;

    #[test]
    fn fixed_forever() {
        // The first numbers of the generator are fixed forever.
        assert_eq!(SplitMix64::new(0).next_u64(), 0xe220_a839_7b1d_cdaf);
    }
}
