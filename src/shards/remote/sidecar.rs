//! A cache entry's sidecar `ENTRY.sum` (a compressed shard's decompressed form: its size
//! and CRC-32C) and the checksumming writer that produces those figures.

use std::fs::File;
use std::io::Write as _;
use std::path::Path;

use crate::error::{Error, Result};
use crate::shards::remote::cache::{Form, suffixed};
use crate::shards::remote::private::{self, How};

/// The decompressed form the sidecar of the entry `path` gives, if it is there and readable.
pub(super) fn read_sum(path: &Path) -> Option<Form> {
    use std::io::Read as _;
    let mut text = String::new();
    let sum = private::open(&suffixed(path, ".sum"), How::Read).ok()?;
    sum.take(200).read_to_string(&mut text).ok()?;
    let mut words = text.split_whitespace();
    if words.next()? != SUM_TAG {
        return None;
    }
    let bytes = words.next()?.parse().ok()?;
    let crc32c = u32::from_str_radix(words.next()?, 16).ok()?;
    Some(Form {
        bytes,
        crc32c,
        decompressed: true,
    })
}

/// Writes the sidecar of the entry `path`: `form`'s size and CRC-32C, under a temporary
/// name (one the eviction passes over), synced, then renamed.
pub(super) fn write_sum(path: &Path, form: &Form) -> Result<()> {
    let text = format!("{SUM_TAG} {} {:08x}\n", form.bytes, form.crc32c);
    let (sum, tmp) = (suffixed(path, ".sum"), suffixed(path, ".sum.tmp-"));
    let tmp = suffixed(&tmp, &std::process::id().to_string());
    // One a killed process of the same id left (the name is never a link followed).
    let _ = std::fs::remove_file(&tmp);
    let written = private::open(&tmp, How::New)
        .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, &sum))
        .map_err(|e| Error::from(e).in_file(&sum));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// The size and CRC-32C of the cache's file `path`, read whole (not through a link).
pub(super) fn crc32c_of(path: &Path) -> std::io::Result<(u64, u32)> {
    use std::io::Read as _;
    let mut file = private::open(path, How::Read)?;
    let (mut buffer, mut bytes, mut crc) = (vec![0; 1 << 20], 0u64, 0u32);
    loop {
        match file.read(&mut buffer)? {
            0 => return Ok((bytes, crc)),
            n => {
                crc = crc32c::crc32c_append(crc, &buffer[..n]);
                bytes += n as u64;
            }
        }
    }
}

/// The first word of a sidecar `.sum`.
const SUM_TAG: &str = "lodtensor-decompressed";

/// A writer that counts and checksums what goes through it.
pub(super) struct Crc32cWriter<W> {
    inner: W,
    bytes: u64,
    crc32c: u32,
}

impl<W: std::io::Write> Crc32cWriter<W> {
    pub(super) fn new(inner: W) -> Self {
        Crc32cWriter {
            inner,
            bytes: 0,
            crc32c: 0,
        }
    }
}

impl<W> Crc32cWriter<W> {
    /// The bytes written so far.
    pub(super) fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Crc32cWriter<std::io::BufWriter<File>> {
    /// The file, flushed, with the bytes written and their CRC-32C.
    pub(super) fn finish(self) -> Result<(File, u64, u32)> {
        let file = self
            .inner
            .into_inner()
            .map_err(|e| Error::from(e.into_error()))?;
        Ok((file, self.bytes, self.crc32c))
    }
}

impl<W: std::io::Write> std::io::Write for Crc32cWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc32c = crc32c::crc32c_append(self.crc32c, &buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}
