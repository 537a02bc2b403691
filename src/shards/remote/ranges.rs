//! Byte ranges of a remote dataset's shards without downloading them: for loaders that
//! plan from the shards' metadata (footers, record-batch messages, offsets). A shard whose
//! entry is in the cache is read there; the others through range requests to the store,
//! [`MAX_RANGE_REQUESTS`] in flight across every shard, each range at most the shard's
//! size in the manifest. Also the range requests of a shard's download, their bodies
//! streamed into the cache's file as they arrive ([`stream_range`]).

use std::fs::File;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt as _;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt as _};

use super::cache::{ShardCache, holds_stored_bytes};
use crate::error::{Error, Result};
use crate::shards::files::read_range;
use crate::shards::reader::mismatch;
use crate::shards::remote::client::store_error;
use crate::shards::source::Reading;

/// How many range requests run at once.
const MAX_RANGE_REQUESTS: usize = 16;
/// How many times a range whose body broke off is requested again (the store's client
/// retries failed requests itself).
const RANGE_ATTEMPTS: u32 = 5;

impl ShardCache {
    /// The bytes of each `(shard, range)` of `wanted`, in order; ranges past a shard's size
    /// in the manifest are refused unread.
    ///
    /// # Errors
    /// [`ArgumentError::InvalidArgument`](crate::ArgumentError::InvalidArgument) for a
    /// range past the shard's size; the store's errors naming the shard's URL,
    /// [`FormatError::ShardMismatch`](crate::FormatError::ShardMismatch) (`bytes`) for an
    /// object shorter than the manifest says; I/O errors of the cache's files.
    pub(crate) fn read_ranges(
        &self,
        wanted: &[(usize, Range<u64>)],
        reading: Reading,
    ) -> Result<Vec<Bytes>> {
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
                let (entry, path) = self.entry(*shard);
                let location = remote.location(&entry.file);
                let store = store.clone();
                async move {
                    let got = fetch_range(store.as_ref(), &location, range.clone()).await;
                    let url = remote.url_of(&entry.file);
                    (i, got.map_err(|e| e.into_error(entry.bytes, &url, &path)))
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
        let (requests, read) = match reading {
            Reading::Metadata => (&self.metadata_requests, &self.metadata_bytes),
            Reading::Rows => (&self.range_requests, &self.range_bytes),
        };
        for (i, bytes) in fetched {
            requests.fetch_add(1, Ordering::Relaxed);
            read.fetch_add(bytes.len() as u64, Ordering::Relaxed);
            out[i] = bytes;
        }
        Ok(out)
    }
}

/// Why a range could not be had.
#[derive(Debug)]
pub(super) enum RangeError {
    Store(object_store::Error),
    /// The object ends at `offset`, before the range does.
    Short {
        offset: u64,
    },
    /// The object is `found` bytes, not the size the manifest says.
    Size {
        found: u64,
    },
    /// Writing the range into the cache's file failed.
    Write(std::io::Error),
}

impl RangeError {
    /// This crate's error for the object at `url`, which the manifest says has `bytes` bytes,
    /// being written to `file`.
    pub(super) fn into_error(self, bytes: u64, url: &str, file: &Path) -> Error {
        match self {
            RangeError::Store(e) => store_error(e, url),
            RangeError::Short { offset: found } | RangeError::Size { found } => {
                mismatch("bytes", bytes, found)
                    .expect_err("an object of another size than the manifest says")
                    .in_file(url)
            }
            RangeError::Write(e) => Error::from(e).in_file(file),
        }
    }
}

/// Bytes `range` of the object at `location`; a body that broke off is requested again.
async fn fetch_range(
    store: &dyn ObjectStore,
    location: &StorePath,
    range: Range<u64>,
) -> Result<Bytes, RangeError> {
    let mut attempt = 0;
    loop {
        match store.get_range(location, range.clone()).await {
            Ok(bytes) if bytes.len() as u64 == range.end - range.start => return Ok(bytes),
            Ok(bytes) => {
                return Err(RangeError::Short {
                    offset: range.start + bytes.len() as u64,
                });
            }
            Err(e) => retry_or_fail(e, &mut attempt, range.start).await?,
        }
    }
}

/// Writes bytes `range` of the object at `location`, which must be `size` bytes (the
/// response says its size: another is refused before its body is read), at their place in
/// `file` as the body arrives; returns their CRC-32C. A body that breaks off is requested
/// again from where it stopped.
pub(super) async fn stream_range(
    store: &dyn ObjectStore,
    location: &StorePath,
    (range, size): (Range<u64>, u64),
    file: &File,
) -> Result<u32, RangeError> {
    use std::os::unix::fs::FileExt as _;
    let (mut at, mut crc, mut attempt) = (range.start, 0, 0);
    while at < range.end {
        let options = object_store::GetOptions {
            range: Some((at..range.end).into()),
            ..Default::default()
        };
        let mut body = match store.get_opts(location, options).await {
            Ok(got) if got.meta.size != size => {
                return Err(RangeError::Size {
                    found: got.meta.size,
                });
            }
            Ok(got) => got.into_stream(),
            Err(e) => {
                retry_or_fail(e, &mut attempt, at).await?;
                continue;
            }
        };
        let (start, mut broke) = (at, false);
        while let Some(part) = body.next().await {
            let part = match part {
                Ok(part) => part,
                Err(e) => {
                    retry_or_fail(e, &mut attempt, at).await?;
                    broke = true;
                    break;
                }
            };
            let part = &part[..part.len().min((range.end - at) as usize)];
            crc = crc32c::crc32c_append(crc, part);
            file.write_all_at(part, at).map_err(RangeError::Write)?;
            at += part.len() as u64;
        }
        if at == start && !broke {
            // An empty body: the object ends here.
            return Err(RangeError::Short { offset: at });
        }
    }
    Ok(crc)
}

/// Waits before request attempt `attempt + 1` if `e` (met at `offset`) is transient and
/// attempts are left; else the error to return.
async fn retry_or_fail(
    e: object_store::Error,
    attempt: &mut u32,
    offset: u64,
) -> Result<(), RangeError> {
    match e {
        e if *attempt + 1 < RANGE_ATTEMPTS && is_transient(&e) => {
            *attempt += 1;
            tokio::time::sleep(Duration::from_millis(100 << *attempt)).await;
            Ok(())
        }
        object_store::Error::Generic { source, .. } if source.to_string().contains("Range") => {
            // The object is shorter than the manifest says: 416 Range Not Satisfiable.
            Err(RangeError::Short { offset })
        }
        e => Err(RangeError::Store(e)),
    }
}

/// Whether `e` may pass if the request is made again (not a missing object, a denied or
/// refused request).
fn is_transient(e: &object_store::Error) -> bool {
    matches!(e, object_store::Error::Generic { .. }) && !e.to_string().contains("Range")
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;

    /// A new empty file under the system's temporary directory.
    fn temporary_file(name: &str) -> (std::path::PathBuf, File) {
        let path = std::env::temp_dir().join(format!("lt-{name}-{}", std::process::id()));
        let file = File::create(&path).expect("a temporary file");
        (path, file)
    }

    #[test]
    fn ranges_are_streamed_into_their_place_with_their_checksums() {
        let data: Bytes = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let (store, location) = (InMemory::new(), StorePath::from("part-00000.arrow"));
        let (path, file) = temporary_file("stream-range");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let (first, second) = runtime.block_on(async {
            store
                .put(&location, data.clone().into())
                .await
                .expect("put");
            // The later range written first, as parallel ranges may land.
            let second = stream_range(&store, &location, (60_000..100_000, 100_000), &file).await;
            let first = stream_range(&store, &location, (0..60_000, 100_000), &file).await;
            (first.expect("first"), second.expect("second"))
        });
        let written = std::fs::read(&path).expect("the file");
        let _ = std::fs::remove_file(&path);
        assert_eq!(written, data);
        let whole = crc32c::crc32c_combine(first, second, 40_000);
        assert_eq!(whole, crc32c::crc32c(&data));
    }
}
