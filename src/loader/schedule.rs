//! Options that change over training: a batch size, token budget or pack length as a
//! list of `(tokens, value)` points in global tokens read.

use super::config::{BatchSize, PlanConfig};
use super::position::Hasher;
use crate::error::{ArgumentError, Result};

/// Values over training: each holds from its point, in global tokens read (every rank's
/// batches together, [`BatchInfo::tokens`](super::BatchInfo::tokens)), to the next point.
/// The first point is at 0; points increase.
///
/// A loader takes a value at the first global step that starts at or past its point: the
/// rest of the epoch is planned again under it, from the samples (or, packed, the tokens)
/// no step before has read (`docs/design.md`, "Changing options within an epoch").
///
/// # Example
/// ```
/// use lodtensor::loader::Schedule;
/// let ramp = Schedule::new(vec![(0, 8), (1_000_000, 16), (5_000_000, 32)])?;
/// assert_eq!((ramp.at(0), ramp.at(999_999), ramp.at(1_000_000), ramp.at(u64::MAX)), (8, 8, 16, 32));
/// assert!(Schedule::new(vec![(5, 8)]).is_err());               // the first point is at 0
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule<T> {
    points: Vec<(u64, T)>,
}

impl<T: Clone> Schedule<T> {
    /// The schedule of `points`.
    ///
    /// # Errors
    /// [`ArgumentError::LoaderConfig`] (option `schedule`) when there are no points, the
    /// first is not at 0, or a point does not come after the one before.
    ///
    /// # Example
    /// ```
    /// use lodtensor::loader::Schedule;
    /// assert!(Schedule::new(vec![(0, 1), (10, 2), (10, 3)]).is_err());   // not increasing
    /// assert_eq!(Schedule::new(vec![(0, 512)])?.points(), [(0, 512)]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(points: Vec<(u64, T)>) -> Result<Self> {
        let bad = |reason: String| {
            Err(ArgumentError::LoaderConfig {
                option: "schedule",
                reason,
            }
            .into())
        };
        match points.first() {
            None => return bad("has no points".into()),
            Some(&(first, _)) if first != 0 => {
                return bad(format!("starts at {first} tokens: the first point is at 0"));
            }
            _ => {}
        }
        if let Some(i) = points.windows(2).position(|p| p[1].0 <= p[0].0) {
            let (a, b) = (points[i].0, points[i + 1].0);
            return bad(format!(
                "points must increase: {b} at index {} follows {a}",
                i + 1
            ));
        }
        Ok(Schedule { points })
    }

    /// The value at `tokens` read.
    ///
    /// # Example
    /// ```
    /// use lodtensor::loader::Schedule;
    /// assert_eq!(Schedule::new(vec![(0, 1), (100, 2)])?.at(100), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn at(&self, tokens: u64) -> T {
        let i = self.points.partition_point(|(p, _)| *p <= tokens);
        self.points[i.saturating_sub(1)].1.clone()
    }

    /// The points.
    ///
    /// # Example
    /// ```
    /// use lodtensor::loader::Schedule;
    /// assert_eq!(Schedule::new(vec![(0, 4), (64, 8)])?.points().len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn points(&self) -> &[(u64, T)] {
        &self.points
    }

    /// The schedule with every value mapped by `f`.
    pub(crate) fn map<U>(self, f: impl Fn(T) -> U) -> Schedule<U> {
        Schedule {
            points: self.points.into_iter().map(|(t, v)| (t, f(v))).collect(),
        }
    }

    /// The first point after `tokens`.
    fn next_point(&self, tokens: u64) -> Option<u64> {
        let i = self.points.partition_point(|(p, _)| *p <= tokens);
        self.points.get(i).map(|(p, _)| *p)
    }
}

/// A loader's schedules: of its batch size or token budget, and of its pack length.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Schedules {
    pub batch: Option<Schedule<BatchSize>>,
    pub pack: Option<Schedule<usize>>,
}

impl Schedules {
    pub fn is_empty(&self) -> bool {
        self.batch.is_none() && self.pack.is_none()
    }

    /// `base` with the scheduled options at `tokens` read.
    pub fn config_at(&self, base: &PlanConfig, tokens: u64) -> PlanConfig {
        let mut config = base.clone();
        if let Some(batch) = &self.batch {
            config.batch = batch.at(tokens);
        }
        if let (Some(pack), Some(packing)) = (&self.pack, &base.packing) {
            config.packing = Some(packing.of_len(pack.at(tokens)));
        }
        config
    }

    /// The first point of either schedule after `tokens`.
    pub fn next_point(&self, tokens: u64) -> Option<u64> {
        let batch = self.batch.as_ref().and_then(|s| s.next_point(tokens));
        let pack = self.pack.as_ref().and_then(|s| s.next_point(tokens));
        match (batch, pack) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The schedules against `base`'s options: packing there for a pack length schedule,
    /// and every configuration they give checked as options are.
    pub fn check(&self, base: &PlanConfig) -> Result<()> {
        let bad = |option: &'static str, reason: &str| {
            Err(ArgumentError::LoaderConfig {
                option,
                reason: reason.to_owned(),
            }
            .into())
        };
        if self.pack.is_some() && base.packing.is_none() {
            return bad(
                "pack",
                "a pack length schedule needs packing options (with_packing)",
            );
        }
        let points = (self.batch.iter().flat_map(|s| s.points.iter().map(|p| p.0)))
            .chain(self.pack.iter().flat_map(|s| s.points.iter().map(|p| p.0)));
        for tokens in points {
            self.config_at(base, tokens).validate()?;
        }
        Ok(())
    }

    /// The words hashed into the fingerprint's options (none without a schedule, so that
    /// positions saved before schedules existed still resume).
    pub fn hash_into(&self, options: &mut Hasher) {
        if let Some(batch) = &self.batch {
            options.add(&[SCHEDULED_BATCH, batch.points.len() as u64]);
            for &(tokens, value) in &batch.points {
                let (kind, n) = match value {
                    BatchSize::Samples(n) => (1, n),
                    BatchSize::Tokens(n) => (2, n),
                };
                options.add(&[tokens, kind, n as u64]);
            }
        }
        if let Some(pack) = &self.pack {
            options.add(&[SCHEDULED_PACK, pack.points.len() as u64]);
            for &(tokens, seq_len) in &pack.points {
                options.add(&[tokens, seq_len as u64]);
            }
        }
    }
}

/// Hashed before a batch-size or token-budget schedule.
const SCHEDULED_BATCH: u64 = 0x7363_6865_6462_6174;
/// Hashed before a pack-length schedule.
const SCHEDULED_PACK: u64 = 0x7363_6865_6470_6163;
