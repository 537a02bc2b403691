//! Text → token-id shards, with a HuggingFace `tokenizer.json` (the `tokenize` feature).
//!
//! [`tokenize`] reads documents from text files (one document per file), JSON lines (a
//! string field of each line, default `"text"`), Parquet files (a string column) or any
//! stream of Arrow record batches, encodes them on every core with the `tokenizers` crate,
//! and writes a sharded dataset (a directory, or a URL with the `remote` feature) of:
//!
//! ```text
//! column    kind          levels                          dtype
//! tokens    LoD tensor    documents → tokens              uint16 (ids < 65,536), else int32
//!                         documents → pieces → tokens     (with a split separator)
//! source    side, utf8    the input each document came from
//! ```
//!
//! Each input (a run of text files up to 64 MiB together, or one JSON lines, Parquet file or
//! stream) is written by a pending writer of its own prefix (`t`, its index and a hash of
//! its sources) and every input is committed together at the end, in order; a run killed midway and started again
//! skips the inputs whose pending or committed shards are there, so every document is
//! written once.
//!
//! ```text
//! inputs ──read──▶ chunks of documents ──encode_batch (all cores)──▶ tokens ──▶ pending shards
//!   (reader thread)                        (rayon)                    (ShardWriter, per input)
//!                                                                  ──▶ commit, all inputs at once
//! ```
//!
//! # Example
//! ```
//! use lodtensor::shards::ShardedDataset;
//! use lodtensor::tokenize::{Input, TokenizeOptions, Tokenizer, tokenize};
//! let dir = tempfile::tempdir()?;
//! let text = dir.path().join("a.txt");
//! std::fs::write(&text, "hello world")?;
//! let tokenizer = Tokenizer::from_file(lodtensor::doc_fixtures::tokenizer_json())?;
//! let out = dir.path().join("tokens");
//! let manifest = tokenize(vec![Input::from(&text)], out.to_str().unwrap(), &tokenizer, &TokenizeOptions::default())?;
//! assert_eq!(manifest.num_rows(), 1);
//! let tokens = ShardedDataset::open(&out)?.sample(0)?;
//! let ids = tokens.column("tokens")?.typed_values::<lodtensor::arrow::types::UInt16Type>()?.to_vec();
//! assert_eq!(ids.last().map(|&id| u32::from(id)), tokenizer.eos_id());   // the end-of-text token closes it
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod byte_bpe;
mod encode;
mod inputs;
#[cfg(feature = "remote")]
mod objects;
mod read;
mod run;
mod vocab;

use std::sync::Arc;

pub use inputs::Input;
pub use run::{tokenize, tokenize_task};
pub use vocab::{Special, Tokenizer};

#[cfg(feature = "remote")]
use crate::shards::RemoteOptions;
use crate::shards::ShardOptions;

/// How far a [`tokenize`] run is, given to the progress callback after each chunk of
/// documents.
///
/// # Example
/// ```
/// let p = lodtensor::tokenize::Progress::default();
/// assert_eq!((p.bytes, p.documents, p.tokens), (0, 0, 0));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Input bytes read (files of inputs skipped count as read).
    pub bytes: u64,
    /// The bytes of every input file (streams count 0).
    pub total_bytes: u64,
    /// Documents encoded by this run.
    pub documents: u64,
    /// Token ids written by this run.
    pub tokens: u64,
    /// Inputs skipped: written by a run before this one.
    pub skipped: usize,
}

/// A progress callback.
type ProgressFn = Arc<dyn Fn(&Progress) + Send + Sync>;

/// Options of [`tokenize`].
///
/// # Example
/// ```
/// use lodtensor::tokenize::{Special, TokenizeOptions};
/// let options = TokenizeOptions::default().with_field("content").with_split("\n\n").with_bos(Special::Auto);
/// assert!(format!("{options:?}").contains("content"));
/// ```
#[derive(Clone, Default)]
pub struct TokenizeOptions {
    field: Option<String>,
    eos: Option<Special>,
    bos: Option<Special>,
    split: Option<String>,
    shards: ShardOptions,
    #[cfg(feature = "remote")]
    remote: RemoteOptions,
    progress: Option<ProgressFn>,
}

impl std::fmt::Debug for TokenizeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenizeOptions")
            .field("field", &self.field)
            .field("eos", &self.eos())
            .field("bos", &self.bos())
            .field("split", &self.split)
            .field("shards", &self.shards)
            .finish_non_exhaustive()
    }
}

impl TokenizeOptions {
    /// The JSON field or column holding each document's text (default `"text"`; text files
    /// take none).
    ///
    /// # Example
    /// ```
    /// let options = lodtensor::tokenize::TokenizeOptions::default().with_field("body");
    /// # let _ = options;
    /// ```
    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// The end-of-text token appended to each document (default [`Special::Auto`]).
    ///
    /// # Example
    /// ```
    /// use lodtensor::tokenize::{Special, TokenizeOptions};
    /// let options = TokenizeOptions::default().with_eos(Special::Token("<|im_end|>".into()));
    /// # let _ = options;
    /// ```
    pub fn with_eos(mut self, eos: Special) -> Self {
        self.eos = Some(eos);
        self
    }

    /// The beginning-of-text token put before each document (default [`Special::None`]).
    ///
    /// # Example
    /// ```
    /// use lodtensor::tokenize::{Special, TokenizeOptions};
    /// let options = TokenizeOptions::default().with_bos(Special::Auto);
    /// # let _ = options;
    /// ```
    pub fn with_bos(mut self, bos: Special) -> Self {
        self.bos = Some(bos);
        self
    }

    /// Splits each document into pieces at `separator` (each piece keeps its separator at
    /// its end, so the pieces put together are the document), each piece encoded alone:
    /// the `tokens` column then has two levels, documents → pieces → tokens.
    ///
    /// # Example
    /// ```
    /// let options = lodtensor::tokenize::TokenizeOptions::default().with_split("\n");
    /// # let _ = options;
    /// ```
    pub fn with_split(mut self, separator: impl Into<String>) -> Self {
        self.split = Some(separator.into());
        self
    }

    /// The shards' budget and file options (their prefix is each input's own).
    ///
    /// # Example
    /// ```
    /// use lodtensor::shards::ShardOptions;
    /// let options = lodtensor::tokenize::TokenizeOptions::default()
    ///     .with_shard_options(ShardOptions::default().with_shard_rows(10_000));
    /// # let _ = options;
    /// ```
    pub fn with_shard_options(mut self, shards: ShardOptions) -> Self {
        self.shards = shards;
        self
    }

    /// The store's options when the output is a URL.
    ///
    /// # Example
    /// ```
    /// use lodtensor::shards::RemoteOptions;
    /// let remote = RemoteOptions::default().with_storage_option("aws_region", "eu-west-1");
    /// let options = lodtensor::tokenize::TokenizeOptions::default().with_remote_options(remote);
    /// # let _ = options;
    /// ```
    #[cfg(feature = "remote")]
    pub fn with_remote_options(mut self, remote: RemoteOptions) -> Self {
        self.remote = remote;
        self
    }

    /// Calls `progress` after each chunk of documents written (from the calling thread).
    ///
    /// # Example
    /// ```
    /// let options = lodtensor::tokenize::TokenizeOptions::default()
    ///     .with_progress(|p| eprintln!("{} of {} bytes", p.bytes, p.total_bytes));
    /// # let _ = options;
    /// ```
    pub fn with_progress(mut self, progress: impl Fn(&Progress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(progress));
        self
    }

    fn eos(&self) -> Special {
        self.eos.clone().unwrap_or(Special::Auto)
    }

    fn bos(&self) -> Special {
        self.bos.clone().unwrap_or(Special::None)
    }

    fn field(&self) -> &str {
        self.field.as_deref().unwrap_or("text")
    }
}
