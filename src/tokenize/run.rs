//! The run: each unit read on a thread of its own, encoded on every core and written by a
//! pending writer of its prefix; units written before (pending or committed) skipped; then
//! every pending unit committed at once. [`tokenize_task`] writes one task's share of the
//! units and commits nothing, for a cluster's tasks and one commit after them.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::mpsc;

use crate::error::{Error, Result};
use crate::shards::{MANIFEST_NAME, Manifest, ShardWriter, commit, pending_path};
use crate::tokenize::encode::Encoder;
use crate::tokenize::inputs::{Unit, units};
use crate::tokenize::read::{Chunk, read};
use crate::tokenize::vocab::Tokenizer;
use crate::tokenize::{Progress, TokenizeOptions};

/// Tokenizes the documents of `inputs` with `tokenizer` into the sharded dataset at
/// `output` (a directory, created if missing, or with the `remote` feature a URL such as
/// `s3://bucket/tokens/`): see the [module](super) for the columns. Every input is written
/// as pending shards of its own and committed with the others at the end, after the shards
/// `output` holds already. Started again after a run was killed, it skips the inputs written
/// before (pending or committed), so that every document is there once; started again after
/// a run that finished, it changes nothing. Returns the manifest committed.
///
/// # Errors
/// [`ErrorKind::Io`](crate::ErrorKind::Io) naming an input that is missing;
/// [`FormatError::InvalidFile`](crate::FormatError::InvalidFile) for a text file that is not
/// UTF-8 or a JSON lines line that is not an object with a string `field` (naming the file
/// and the line); [`ArgumentError::NoSuchColumn`](crate::ArgumentError::NoSuchColumn) for a
/// Parquet file or stream without the column; [`ArgumentError::InvalidArgument`](crate::ArgumentError::InvalidArgument)
/// naming `eos` or `bos` when the tokenizer has no such token; the shard writer's errors.
/// Inputs written before the failure stay pending, for a run started again.
///
/// # Example
/// ```
/// use lodtensor::tokenize::{Input, TokenizeOptions, Tokenizer, tokenize};
/// let dir = tempfile::tempdir()?;
/// let lines = dir.path().join("docs.jsonl");
/// std::fs::write(&lines, "{\"text\": \"one\"}\n{\"text\": \"two\\n\\nthree\"}\n")?;
/// let tokenizer = Tokenizer::from_file(lodtensor::doc_fixtures::tokenizer_json())?;
/// let options = TokenizeOptions::default().with_split("\n\n");
/// let out = dir.path().join("tokens");
/// let manifest = tokenize(vec![Input::from(&lines)], out.to_str().unwrap(), &tokenizer, &options)?;
/// assert_eq!(manifest.num_rows(), 2);
/// assert_eq!(manifest.columns[0].level_names, ["documents", "pieces"]);   // → tokens
/// // Started again: nothing to do, nothing written twice.
/// let again = tokenize(vec![Input::from(&lines)], out.to_str().unwrap(), &tokenizer, &options)?;
/// assert_eq!(again, manifest);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn tokenize(
    inputs: Vec<crate::tokenize::Input>,
    output: &str,
    tokenizer: &Tokenizer,
    options: &TokenizeOptions,
) -> Result<Manifest> {
    write_pending(inputs, output, tokenizer, options, &|_| true)?;
    match crate::shards::is_url(output) {
        true => remote::commit_url(output, options),
        false => commit(output),
    }
}

/// Task `task` of `tasks` of a [`tokenize`] run shared out: writes the units of `inputs`
/// whose index `i` in the run has `i % tasks == task`, as pending shards of their prefixes
/// (the prefixes [`tokenize`] gives, so that either skips what the other wrote), skipping
/// those written before; commits nothing. Once every task has finished,
/// [`shards::commit`](crate::shards::commit) (or `commit_with` for a URL) of `output`
/// gives the dataset [`tokenize`] would. Returns this task's [`Progress`].
///
/// # Errors
/// [`ArgumentError::InvalidArgument`](crate::ArgumentError::InvalidArgument) naming `task`
/// when it is not less than `tasks`; else those of [`tokenize`].
///
/// # Example
/// ```
/// use lodtensor::tokenize::{Input, TokenizeOptions, Tokenizer, tokenize_task};
/// let dir = tempfile::tempdir()?;
/// let corpus = dir.path().join("corpus");
/// std::fs::create_dir(&corpus)?;
/// for name in ["a.jsonl", "b.jsonl", "c.jsonl"] {
///     std::fs::write(corpus.join(name), "{\"text\": \"one\"}\n")?;
/// }
/// let tokenizer = Tokenizer::from_file(lodtensor::doc_fixtures::tokenizer_json())?;
/// let out = dir.path().join("tokens");
/// let out = out.to_str().unwrap();
/// let options = TokenizeOptions::default();
/// for task in 0..2 {
///     let inputs = vec![Input::from(&corpus)];
///     let done = tokenize_task(inputs, out, &tokenizer, &options, task, 2)?;
///     assert_eq!(done.documents, [2, 1][task]);   // units 0 and 2, then unit 1
/// }
/// assert_eq!(lodtensor::shards::commit(out)?.num_rows(), 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn tokenize_task(
    inputs: Vec<crate::tokenize::Input>,
    output: &str,
    tokenizer: &Tokenizer,
    options: &TokenizeOptions,
    task: usize,
    tasks: usize,
) -> Result<Progress> {
    if task >= tasks {
        return Err(Error::invalid_argument(
            "tokenize_task",
            "task",
            format!("{task} of {tasks} tasks"),
            "less than the number of tasks",
        ));
    }
    write_pending(inputs, output, tokenizer, options, &|i| i % tasks == task)
}

/// Writes the units of `inputs` that `dealt` takes (by their index) as pending shards,
/// skipping those written before (pending or committed).
fn write_pending(
    inputs: Vec<crate::tokenize::Input>,
    output: &str,
    tokenizer: &Tokenizer,
    options: &TokenizeOptions,
    dealt: &dyn Fn(usize) -> bool,
) -> Result<Progress> {
    let encoder = Encoder {
        tokenizer,
        eos: tokenizer.special_id("eos", &options.eos())?,
        bos: tokenizer.special_id("bos", &options.bos())?,
        split: options.split.as_deref().filter(|s| !s.is_empty()),
    };
    let units: Vec<Unit> = (units(inputs, options)?.into_iter().enumerate())
        .filter_map(|(i, unit)| dealt(i).then_some(unit))
        .collect();
    let mut progress = Progress {
        total_bytes: units.iter().map(|u| u.bytes).sum(),
        ..Progress::default()
    };
    if crate::shards::is_url(output) {
        remote::write_url(units, output, &encoder, options, &mut progress)?;
        return Ok(progress);
    }
    let dir = Path::new(output);
    std::fs::create_dir_all(dir).map_err(|e| Error::from(e).in_file(dir))?;
    let committed = match dir.join(MANIFEST_NAME).exists() {
        true => prefixes(&Manifest::load(dir.join(MANIFEST_NAME))?),
        false => BTreeSet::new(),
    };
    for unit in units {
        if committed.contains(&unit.prefix) || pending_path(dir, &unit.prefix).exists() {
            skip(&unit, &mut progress, options);
            continue;
        }
        let shards = options.shards.clone().with_prefix(&unit.prefix);
        let mut writer = ShardWriter::pending(dir, shards)?;
        write_unit(unit, &encoder, options, &mut progress, &mut writer)?;
        writer.finish()?;
    }
    Ok(progress)
}

/// Counts a unit written before as done.
fn skip(unit: &Unit, progress: &mut Progress, options: &TokenizeOptions) {
    progress.bytes += unit.bytes;
    progress.skipped += 1;
    if let Some(report) = &options.progress {
        report(progress);
    }
}

/// The prefixes of the units whose shards `manifest` lists (`PREFIX-NNNNN.arrow`).
fn prefixes(manifest: &Manifest) -> BTreeSet<String> {
    (manifest.shards.iter())
        .filter_map(|s| Some(s.file.rsplit_once('-')?.0.to_owned()))
        .collect()
}

/// Reads `unit` on a thread of its own while this one encodes and writes each chunk.
fn write_unit(
    unit: Unit,
    encoder: &Encoder<'_>,
    options: &TokenizeOptions,
    progress: &mut Progress,
    writer: &mut ShardWriter,
) -> Result<()> {
    let field = options.field();
    std::thread::scope(|scope| {
        let (send, chunks) = mpsc::sync_channel::<Chunk>(2);
        let reader = scope.spawn(move || {
            // A closed channel: the writer failed, and says why.
            read(unit.source, field, &mut |chunk| send.send(chunk).or(Ok(())))
        });
        let mut wrote = false;
        let written = chunks.iter().try_for_each(|chunk| {
            let dataset = encoder.encode(&chunk)?;
            writer.write(&dataset)?;
            wrote = true;
            progress.bytes += chunk.bytes;
            progress.documents += chunk.texts.len() as u64;
            progress.tokens += dataset.columns()[0].tensor()?.values().num_elements() as u64;
            if let Some(report) = &options.progress {
                report(progress);
            }
            Ok(())
        });
        // A reader still sending stops once the chunks' receiver is gone.
        drop(chunks);
        let read = reader
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        written.and(read)?;
        if !wrote {
            // The columns of a unit without documents.
            writer.write(&encoder.encode(&Chunk::default())?)?;
        }
        Ok(())
    })
}

/// Units written to a URL.
#[cfg(feature = "remote")]
mod remote {
    use super::*;
    use crate::shards::{Location, commit_with, pending_prefixes, read_manifest_url};

    /// As into a directory, each unit's shards written by a pending writer to the URL
    /// (staged in a local directory of its own, uploaded by `finish`).
    pub(super) fn write_url(
        units: Vec<Unit>,
        url: &str,
        encoder: &Encoder<'_>,
        options: &TokenizeOptions,
        progress: &mut Progress,
    ) -> Result<()> {
        let remote = &options.remote;
        let mut done: BTreeSet<String> = pending_prefixes(url, remote)?.into_iter().collect();
        if let Some(manifest) = read_manifest_url(url, remote)? {
            done.extend(prefixes(&manifest));
        }
        for unit in units {
            if done.contains(&unit.prefix) {
                skip(&unit, progress, options);
                continue;
            }
            let shards = (options.shards.clone())
                .with_prefix(&unit.prefix)
                .with_remote_options(remote.clone());
            let mut writer = ShardWriter::pending(Location::Url(url.to_owned()), shards)?;
            write_unit(unit, encoder, options, progress, &mut writer)?;
            writer.finish()?;
        }
        Ok(())
    }

    /// Commits the pending manifests at `url`.
    pub(super) fn commit_url(url: &str, options: &TokenizeOptions) -> Result<Manifest> {
        commit_with(url, &options.remote)
    }
}

/// Without the `remote` feature: an error saying so.
#[cfg(not(feature = "remote"))]
mod remote {
    use super::*;

    pub(super) fn write_url(
        _units: Vec<Unit>,
        url: &str,
        _encoder: &Encoder<'_>,
        _options: &TokenizeOptions,
        _progress: &mut Progress,
    ) -> Result<()> {
        Err(no_remote(url))
    }

    pub(super) fn commit_url(url: &str, _options: &TokenizeOptions) -> Result<Manifest> {
        Err(no_remote(url))
    }

    fn no_remote(url: &str) -> Error {
        Error::invalid_argument(
            "tokenize",
            "output",
            url,
            "a directory: this lodtensor was built without the `remote` feature (URLs)",
        )
    }
}
