//! Byte ranges of a remote dataset's shards without downloading them: for loaders that
//! plan from the shards' metadata (footers, record-batch messages, offsets). A shard whose
//! entry is in the cache is read there; the others through range requests to the store,
//! [`MAX_RANGE_REQUESTS`] in flight across every shard, each range at most the shard's
//! size in the manifest.

use std::ops::Range;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use futures_util::StreamExt as _;

use super::cache::{ShardCache, fetch_range, holds_stored_bytes};
use crate::error::{Error, Result};
use crate::shards::files::read_range;

/// How many range requests run at once.
const MAX_RANGE_REQUESTS: usize = 16;

impl ShardCache {
    /// The bytes of each `(shard, range)` of `wanted`, in order; ranges past a shard's size
    /// in the manifest are refused unread.
    ///
    /// # Errors
    /// [`ArgumentError::InvalidArgument`](crate::ArgumentError::InvalidArgument) for a
    /// range past the shard's size; the store's errors naming the shard's URL,
    /// [`FormatError::ShardMismatch`](crate::FormatError::ShardMismatch) (`bytes`) for an
    /// object shorter than the manifest says; I/O errors of the cache's files.
    pub(crate) fn read_ranges(&self, wanted: &[(usize, Range<u64>)]) -> Result<Vec<Bytes>> {
        let mut out = vec![Bytes::new(); wanted.len()];
        let mut requests = Vec::new();
        for (i, (shard, range)) in wanted.iter().enumerate() {
            let (entry, path) = self.entry(*shard);
            if range.end > entry.bytes || range.start > range.end {
                return Err(Error::invalid_argument(
                    "read_ranges",
                    "range",
                    format!("{range:?}"),
                    format!("a range of shard {shard}'s {} bytes", entry.bytes),
                ));
            }
            if holds_stored_bytes(&path, entry) {
                out[i] = read_range(&path, range.clone(), entry.bytes)?;
            } else if !range.is_empty() {
                requests.push(i);
            }
        }
        let remote = self.remote();
        let fetched = remote.with_store(|store| async move {
            let fetches = requests.into_iter().map(|i| {
                let (shard, range) = &wanted[i];
                let (entry, _) = self.entry(*shard);
                let location = remote.location(&entry.file);
                let store = store.clone();
                async move {
                    let got = fetch_range(store.as_ref(), &location, range.clone()).await;
                    let url = remote.url_of(&entry.file);
                    (i, got.map_err(|e| e.into_error(entry.bytes, &url)))
                }
            });
            let mut stream =
                futures_util::stream::iter(fetches).buffer_unordered(MAX_RANGE_REQUESTS);
            let mut fetched = Vec::new();
            while let Some((i, got)) = stream.next().await {
                fetched.push((i, got?));
            }
            Ok(fetched)
        })?;
        for (i, bytes) in fetched {
            self.metadata_requests.fetch_add(1, Ordering::Relaxed);
            self.metadata_bytes
                .fetch_add(bytes.len() as u64, Ordering::Relaxed);
            out[i] = bytes;
        }
        Ok(out)
    }
}
