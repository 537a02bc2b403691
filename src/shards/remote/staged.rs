//! A [`ShardWriter`](crate::shards::ShardWriter) to a URL: its shards written into a local
//! directory of its own (under the system's temporary directory, `TMPDIR`), uploaded when
//! it finishes (`upload.rs`); the directory is removed then, or
//! when the writer is dropped unfinished.

use std::path::{Path, PathBuf};

use crate::error::{DatasetError, Error, Result};
use crate::shards::location::Upload;
use crate::shards::manifest::{MANIFEST_NAME, Manifest};
use crate::shards::remote::pending::read_manifest_url;
use crate::shards::remote::upload::{UploadAs, upload};
use crate::shards::remote_options::RemoteOptions;
use crate::shards::writer::{ShardOptions, Target};

/// The upload of a writer to a URL.
#[derive(Debug)]
struct Staged {
    url: String,
    options: RemoteOptions,
    target: Target,
    /// The pending writer's prefix.
    prefix: String,
    local: PathBuf,
}

/// The upload of a writer of `target` to `url`, its local directory made; a `Create`
/// refused now where a dataset is, an `Append` where none is, as in a directory.
pub(crate) fn stage(url: &str, target: Target, options: &ShardOptions) -> Result<Box<dyn Upload>> {
    let remote = options.remote.clone();
    // A pending writer may start before the dataset exists, or after.
    if target != Target::Pending {
        let exists = read_manifest_url(url, &remote)?.is_some();
        let refusal = match (target, exists) {
            (Target::Create, true) => Some(DatasetError::AlreadyThere),
            (Target::Append, false) => Some(DatasetError::NothingToAppendTo),
            _ => None,
        };
        if let Some(refusal) = refusal {
            let manifest = format!("{}/{MANIFEST_NAME}", url.trim_end_matches('/'));
            return Err(Error::from(refusal).in_file(manifest));
        }
    }
    Ok(Box::new(Staged {
        url: url.to_owned(),
        options: remote,
        target,
        prefix: options.prefix.clone(),
        local: local_dir()?,
    }))
}

impl Upload for Staged {
    fn local(&self) -> &Path {
        &self.local
    }

    fn finish(self: Box<Self>) -> Result<Manifest> {
        let (dir, url, options) = (&self.local, self.url.as_str(), &self.options);
        match self.target {
            Target::Create => upload(dir, url, options, UploadAs::Create),
            Target::Append => upload(dir, url, options, UploadAs::Append),
            Target::Pending => upload(dir, url, options, UploadAs::Pending(&self.prefix)),
            Target::Overwrite => upload(dir, url, options, UploadAs::Overwrite),
        }
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.local);
    }
}

/// A new, empty directory of this process under the system's temporary directory.
fn local_dir() -> Result<PathBuf> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir = std::env::temp_dir().join(format!(
        "lodtensor-upload-{}-{n}-{nanos:08x}",
        std::process::id()
    ));
    std::fs::create_dir(&dir).map_err(|e| Error::from(e).in_file(&dir))?;
    Ok(dir)
}
