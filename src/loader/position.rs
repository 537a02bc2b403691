//! Where a loader stands, and the fingerprint that ties a saved position to the plans it
//! came from.

use crate::error::ArgumentError;
use crate::error::{Error, Result};
use crate::rng::SplitMix64;

/// What an epoch's plan depends on besides the epoch, hashed in parts so that a position
/// from another plan is refused with the part that differs named.
///
/// # Example
/// ```
/// # use lodtensor::MappedDataset;
/// # let (dir, path) = lodtensor::doc_fixtures::file()?;
/// # let file = MappedDataset::open(&path)?;
/// use lodtensor::Loader;
/// let loader = Loader::builder(&file).build()?;
/// assert_eq!(loader.fingerprint().record_batches, 0);       // no chunk shuffle: not hashed
/// assert_eq!(loader.fingerprint(), Loader::builder(&file).build()?.fingerprint());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fingerprint {
    /// The options: batch size or token budget, `drop_last`, shuffle and seed, buckets,
    /// `shard` (rank and world size) or `elastic_shard` (neither), packing, balance (its
    /// weight, look-ahead and, since a step's batches depend on it, the world size).
    pub options: u64,
    /// The length of every sample, in file order (the data, and the length column).
    pub lengths: u64,
    /// The record-batch boundaries of the file where they decide the order (a chunk
    /// shuffle's runs never cross one); 0 otherwise.
    pub record_batches: u64,
}

impl Fingerprint {
    /// What differs between `self` (this loader's) and `other` (a saved position's), in
    /// words; empty when they are the same.
    pub(crate) fn differences(&self, other: &Fingerprint) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.options != other.options {
            out.push("the options (batch size or token budget, drop_last, shuffle or seed, buckets, shard or elastic_shard, packing, balance; with balance the world size too: a balanced position resumes only on as many ranks)");
        }
        if self.lengths != other.lengths {
            out.push(LENGTHS_DIFFER);
        }
        if self.record_batches != other.record_batches {
            out.push(
                "the record-batch boundaries (the same rows written in other record batches; \
                 a chunk shuffle's order follows them)",
            );
        }
        out
    }
}

/// What [`Fingerprint::differences`] says when the samples' lengths differ.
pub(crate) const LENGTHS_DIFFER: &str =
    "the samples or their lengths (other data, or another length column)";

/// A small portable hash built on the SplitMix64 mixer: the same words give the same hash
/// on every machine and in every version.
pub(crate) struct Hasher(u64);

impl Hasher {
    pub(crate) fn new() -> Self {
        Hasher(0x6c6f_6474_656e_736f)
    }

    pub(crate) fn add(&mut self, words: &[u64]) {
        for &w in words {
            self.0 = SplitMix64::new(self.0 ^ w).next_u64();
        }
    }

    pub(crate) fn finish(&self) -> u64 {
        self.0
    }
}

/// Where a loader stands: the next batch it returns is batch `batch` of epoch `epoch`.
///
/// `fingerprint` ties the position to what made the plan, so that a position is never
/// restored into a loader that would make other batches.
///
/// # Example
/// ```
/// # use lodtensor::MappedDataset;
/// # let (dir, path) = lodtensor::doc_fixtures::file()?;
/// # let file = MappedDataset::open(&path)?;
/// use lodtensor::Loader;
/// let mut loader = Loader::builder(&file).with_batch_size(2).build()?;
/// let position = loader.next_batch()?.expect("a batch").next_position();
/// assert_eq!((position.epoch, position.batch), (0, 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    /// The epoch.
    pub epoch: u64,
    /// The batch within the epoch (when ranks take turns, the step: the first batch of the
    /// plan that some rank has not read).
    pub batch: usize,
    /// The loader's fingerprint (see [`super::Loader::fingerprint`]).
    pub fingerprint: Fingerprint,
}

impl Position {
    /// The position as JSON: `{"epoch": 3, "batch": 120, "fingerprint": {"options": "…",
    /// "lengths": "…", "record_batches": "…"}}` (hashes as hex strings, since JSON numbers
    /// lose 64-bit integers in some readers).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let position = Loader::builder(&file).build()?.next_position();
    /// assert!(position.to_json().starts_with(r#"{"batch":0,"epoch":0,"fingerprint":{"#));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_json(&self) -> String {
        let f = &self.fingerprint;
        serde_json::json!({
            "epoch": self.epoch,
            "batch": self.batch,
            "fingerprint": {
                "options": format!("{:016x}", f.options),
                "lengths": format!("{:016x}", f.lengths),
                "record_batches": format!("{:016x}", f.record_batches),
            },
        })
        .to_string()
    }

    /// A position from [`Position::to_json`].
    ///
    /// # Errors
    /// [`ArgumentError::InvalidPosition`] for anything else.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::{Loader, Position};
    /// let position = Loader::builder(&file).build()?.next_position();
    /// assert_eq!(Position::from_json(&position.to_json())?, position);
    /// assert!(Position::from_json(r#"{"epoch": 1}"#).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_json(json: &str) -> Result<Self> {
        let bad = |reason: String| -> Error {
            ArgumentError::InvalidPosition {
                json: crate::error::elided(json),
                reason,
            }
            .into()
        };
        let v: serde_json::Value = serde_json::from_str(json).map_err(|e| bad(e.to_string()))?;
        let epoch = v["epoch"]
            .as_u64()
            .ok_or_else(|| bad("\"epoch\" is not an unsigned integer".to_owned()))?;
        let batch = v["batch"]
            .as_u64()
            .and_then(|b| usize::try_from(b).ok())
            .ok_or_else(|| bad("\"batch\" is not an unsigned integer".to_owned()))?;
        let hash = |key: &str| {
            v["fingerprint"][key]
                .as_str()
                .and_then(|s| u64::from_str_radix(s, 16).ok())
                .ok_or_else(|| bad(format!("\"fingerprint\".\"{key}\" is not a hex string")))
        };
        Ok(Position {
            epoch,
            batch,
            fingerprint: Fingerprint {
                options: hash("options")?,
                lengths: hash("lengths")?,
                record_batches: hash("record_batches")?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_holding_a_huge_string_gives_a_bounded_error() {
        // A loader state holding a 50 MB string: the error holds and shows a few hundred bytes.
        let state = format!("{{\"epoch\": \"{}\"}}", "9".repeat(50_000_000));
        let e = Position::from_json(&state).unwrap_err();
        let message = e.to_string();
        assert!(message.len() <= 1000, "{} bytes", message.len());
        assert!(message.contains("bytes elided]"), "{message}");
        assert!(
            message.ends_with("\"epoch\" is not an unsigned integer"),
            "{message}"
        );
        assert!(format!("{e:?}").len() < 1000);
    }

    #[test]
    fn positions_round_trip_through_json() {
        let p = Position {
            epoch: 3,
            batch: 120,
            fingerprint: Fingerprint {
                options: u64::MAX - 5,
                lengths: 7,
                record_batches: 0,
            },
        };
        assert_eq!(Position::from_json(&p.to_json()).unwrap(), p);
        for bad in [
            "{",
            r#"{"epoch": -1, "batch": 0, "fingerprint": {"options": "0", "lengths": "0", "record_batches": "0"}}"#,
            r#"{"epoch": 1, "fingerprint": {"options": "0", "lengths": "0", "record_batches": "0"}}"#,
            r#"{"epoch": 1, "batch": 0, "fingerprint": "0"}"#,
            r#"{"epoch": 1, "batch": 0, "fingerprint": {"options": "0", "lengths": 7, "record_batches": "0"}}"#,
        ] {
            assert!(matches!(
                Position::from_json(bad).map_err(Error::into_kind),
                Err(crate::error::ErrorKind::Argument(
                    ArgumentError::InvalidPosition { .. }
                ))
            ));
        }
    }

    #[test]
    fn differences_are_named() {
        let a = Fingerprint {
            options: 1,
            lengths: 2,
            record_batches: 3,
        };
        assert!(a.differences(&a).is_empty());
        let b = Fingerprint {
            record_batches: 4,
            ..a
        };
        assert_eq!(a.differences(&b).len(), 1);
        assert!(a.differences(&b)[0].starts_with("the record-batch boundaries"));
    }
}
