//! Reading batches ahead on a thread, through a bounded queue.

use crate::error::UnusableError;
use std::sync::mpsc::{Receiver, sync_channel};
use std::thread::JoinHandle;

use super::{Batch, Loader};
use crate::error::Result;

/// Batches of the current epoch, read by a thread at most `depth` batches ahead.
///
/// The thread stops at the end of the epoch, at the first error (which it passes on), or
/// when the `Prefetch` is dropped. It may have read up to `depth + 1` batches that were
/// never taken: resume from the last consumed [`Batch::next_position`], not from the
/// loader's own position.
///
/// # Example
/// ```
/// # use lodtensor::io::{ipc_reader::MappedDataset, ipc_writer::{DatasetWriter, WriteOptions}};
/// # use arrow_array::types::Float32Type;
/// use lodtensor::loader::Loader;
/// # let (dir, path) = lodtensor::doc_fixtures::file()?;
/// let file = MappedDataset::open(&path)?;
/// let loader = Loader::builder(&file).with_batch_size(2).with_shuffle(1).build()?;
/// let mut prefetch = loader.prefetch(2);
/// let rows: usize = prefetch.by_ref().map(|b| b.map(|b| b.data().num_rows())).sum::<Result<_, _>>()?;
/// assert_eq!(rows, 5);
/// let loader = prefetch.into_loader()?;          // back, at the start of epoch 1
/// assert_eq!((loader.next_position().epoch, loader.next_position().batch), (1, 0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Prefetch {
    receiver: Option<Receiver<Result<Batch>>>,
    thread: Option<JoinHandle<Loader>>,
}

impl Prefetch {
    pub(super) fn start(mut loader: Loader, depth: usize) -> Self {
        // The channel's slots are allocated up front: no more than the epoch has batches
        // (a depth past that would hold nothing, and `usize::MAX` would not fit in memory).
        let epoch = loader.next_position().epoch;
        let depth = depth.min(loader.num_batches(epoch).max(1));
        let (sender, receiver) = sync_channel(depth);
        let thread = std::thread::spawn(move || {
            loop {
                match loader.next_batch() {
                    Ok(Some(batch)) => {
                        if sender.send(Ok(batch)).is_err() {
                            break;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        let _ = sender.send(Err(e));
                        break;
                    }
                }
            }
            loader
        });
        Prefetch {
            receiver: Some(receiver),
            thread: Some(thread),
        }
    }

    /// Stops the thread and returns the loader, positioned after the last batch the
    /// thread read.
    ///
    /// # Errors
    /// [`UnusableError::PrefetchPanicked`] if the thread panicked.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let mut prefetch = Loader::builder(&file).with_batch_size(2).build()?.prefetch(2);
    /// let first = prefetch.next().expect("a batch")?;
    /// let mut loader = prefetch.into_loader()?;                 // maybe read ahead
    /// loader.seek(first.next_position())?;                      // back after the batch used
    /// assert_eq!(loader.next_batch()?.expect("the second").samples(), &[2, 3]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_loader(mut self) -> Result<Loader> {
        self.receiver = None;
        let thread = self.thread.take().expect("taken only here and in drop");
        thread
            .join()
            .map_err(|_| UnusableError::PrefetchPanicked.into())
    }
}

impl Iterator for Prefetch {
    type Item = Result<Batch>;

    fn next(&mut self) -> Option<Self::Item> {
        self.receiver.as_ref()?.recv().ok()
    }
}

impl Drop for Prefetch {
    fn drop(&mut self) {
        self.receiver = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
