//! Repeated timings on a noisy machine: each figure is the best (fastest) of several runs,
//! since another process can only slow a run down, and two operations compared with each
//! other run alternately, so that both see the same machine.
//! Shared with `benches/storage.rs` and `cli/benches/shards_open.rs`.

use std::time::Instant;

/// The timings of repeated runs of one operation, in seconds.
#[derive(Clone, Debug)]
pub struct Samples(Vec<f64>);

impl Samples {
    /// The fastest run, in seconds.
    pub fn best(&self) -> f64 {
        self.0.iter().copied().fold(f64::INFINITY, f64::min)
    }

    /// The runs of `parts` together.
    pub fn merged(parts: impl IntoIterator<Item = Samples>) -> Samples {
        Samples(parts.into_iter().flat_map(|s| s.0).collect())
    }
}

/// Seconds that `f` takes, or its error.
fn time<E>(f: &mut impl FnMut() -> Result<(), E>) -> Result<f64, E> {
    let start = Instant::now();
    f()?;
    Ok(start.elapsed().as_secs_f64())
}

/// `n` timings of `f` (at least one).
///
/// # Errors
/// The first error of `f`.
pub fn repeat<E>(n: usize, mut f: impl FnMut() -> Result<(), E>) -> Result<Samples, E> {
    (0..n.max(1))
        .map(|_| time(&mut f))
        .collect::<Result<_, _>>()
        .map(Samples)
}

/// `n` timings each of `a` and `b`, run alternately: a, b, a, b, …
///
/// # Errors
/// The first error of `a` or `b`.
pub fn alternate<E>(
    n: usize,
    mut a: impl FnMut() -> Result<(), E>,
    mut b: impl FnMut() -> Result<(), E>,
) -> Result<(Samples, Samples), E> {
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for _ in 0..n.max(1) {
        ta.push(time(&mut a)?);
        tb.push(time(&mut b)?);
    }
    Ok((Samples(ta), Samples(tb)))
}

/// The best of `n` timings each of `a` and `b`, run alternately, in seconds.
#[allow(dead_code)] // for the criterion benches, which time operations that cannot fail
pub fn bests(n: usize, mut a: impl FnMut(), mut b: impl FnMut()) -> (f64, f64) {
    let infallible = |f: &mut dyn FnMut()| {
        f();
        Ok::<_, std::convert::Infallible>(())
    };
    let Ok((a, b)) = alternate(n, || infallible(&mut a), || infallible(&mut b));
    (a.best(), b.best())
}
