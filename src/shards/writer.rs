//! The sharded dataset writer: rolls to a new shard at a row or byte budget, each shard
//! written atomically under `_pending/`, then committed (`store.rs`): the shards renamed to
//! their final names and the manifest replaced atomically, last.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::dataset::Dataset;
use crate::error::ArgumentError;
use crate::error::{DatasetError, Error, Result};
use crate::io::ipc_writer::{DatasetWriter, row_bytes};
use crate::shards::index::{index_files, put_local};
use crate::shards::location::{Location, Upload, stage_url};
use crate::shards::manifest::{
    ColumnSpec, ColumnStats, MANIFEST_NAME, Manifest, ShardEntry, file_crc32c,
};
use crate::shards::names::ShardNames;
use crate::shards::store::{
    Commit, LocalStore, ManifestVersion, PENDING_DIR, PENDING_PREFIX, check_prefix, commit_with,
    remove_dir_if_idle,
};

mod options;

pub use options::ShardOptions;

/// Where [`ShardWriter::finish`] records the new shards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// A new dataset's manifest (refused if another writer made one meanwhile).
    Create,
    /// The dataset's manifest, replaced by its shards (as they are at the commit) plus the
    /// new ones.
    Append,
    /// A pending manifest of this writer's shards, merged by [`commit`](fn@super::commit).
    Pending,
    /// The dataset's manifest (or a new one), replaced by one that lists the new shards
    /// only.
    Overwrite,
}

/// Where a writer's shards wait for their commit: a directory under `_pending/`, which
/// dataset discovery ignores, locked (`flock`) while the writer lives so that `vacuum`
/// leaves it alone. Dropped before its shards were handed over (an error, no `finish`),
/// it removes them.
struct Staging {
    /// The directory, relative to the dataset's.
    rel: PathBuf,
    /// The shards written and not handed over yet.
    written: Vec<PathBuf>,
    _lock: File,
    /// A writer's own directory, removed when dropped; `None` for a pending writer's.
    _temp: Option<tempfile::TempDir>,
}

impl Staging {
    /// A directory of its own for a writer of `dir` (`_pending/PREFIX-XXXXXXXX`), or the
    /// pending writer's of `prefix` (`_pending/PREFIX.pending`, kept until committed).
    ///
    /// A commit that removes an emptied `_pending/` (or an emptied pending writer's
    /// directory) at the same moment makes a creation fail with `NotFound`: it is tried
    /// again.
    fn new(dir: &Path, prefix: &str, pending: bool) -> Result<Self> {
        let root = dir.join(PENDING_DIR);
        let mut attempt = 0;
        let (path, lock, temp) = loop {
            match Self::create(&root, prefix, pending) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && attempt < 5 => attempt += 1,
                made => break made.map_err(|e| Error::from(e).in_file(&root))?,
            }
        };
        let name = path.file_name().expect("a directory's name").to_owned();
        Ok(Staging {
            rel: Path::new(PENDING_DIR).join(name),
            written: Vec::new(),
            _lock: lock,
            _temp: temp,
        })
    }

    /// The directory made and locked.
    fn create(
        root: &Path,
        prefix: &str,
        pending: bool,
    ) -> std::io::Result<(PathBuf, File, Option<tempfile::TempDir>)> {
        std::fs::create_dir_all(root)?;
        let (path, temp) = match pending {
            true => {
                let path = root.join(format!("{prefix}.pending"));
                std::fs::create_dir_all(&path)?;
                (path, None)
            }
            false => {
                let temp = tempfile::Builder::new()
                    .prefix(&format!("{prefix}-"))
                    .tempdir_in(root)?;
                (temp.path().to_path_buf(), Some(temp))
            }
        };
        let lock = File::open(&path)?;
        lock.lock()?;
        // A commit's cleanup may have removed the directory, empty, between its creation
        // and the lock: then it is made again (the caller retries on `NotFound`).
        use std::os::unix::fs::MetadataExt as _;
        let held = lock.metadata()?;
        match std::fs::metadata(&path) {
            Ok(now) if (now.dev(), now.ino()) == (held.dev(), held.ino()) => Ok((path, lock, temp)),
            Ok(_) | Err(_) => Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the staging directory was removed before it was locked",
            )),
        }
    }
}

impl Drop for Staging {
    /// Removes the shards not handed over, a writer's own directory, then `_pending/` if
    /// nothing else is in it.
    fn drop(&mut self) {
        for path in &self.written {
            let _ = std::fs::remove_file(path);
        }
        if let Some(temp) = self._temp.take() {
            let root = temp.path().parent().map(Path::to_path_buf);
            drop(temp);
            if let Some(root) = root {
                remove_dir_if_idle(&root);
            }
        }
    }
}

/// The shard being written.
struct OpenShard {
    writer: DatasetWriter,
    file: String,
    rows: usize,
    bytes: usize,
    stats: Vec<ColumnStats>,
}

/// Writes a sharded dataset: a directory of lodtensor Arrow files (`part-00000.arrow`, …)
/// and its manifest `_lodtensor.json` (see `format-spec.md`).
///
/// Rows are appended as with [`DatasetWriter`]; a shard is closed (synced and renamed into
/// the writer's own directory under `_pending/`, which dataset discovery ignores) once it
/// reaches the row or byte budget of [`ShardOptions`]; [`ShardWriter::finish`] commits:
/// the shards take their final names and the manifest is replaced atomically, last. A
/// process killed at any moment leaves the previous manifest, and every shard it lists,
/// intact: readers see the dataset before the write or after it, never a part of it. Any
/// number of writers may write to one dataset at once (`docs/shards.md`, concurrency).
///
/// # Example
/// ```
/// use lodtensor::{Column, Dataset, LodTensor};
/// use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
/// use arrow_array::types::Float32Type;
/// let dir = tempfile::tempdir()?;
/// let t = LodTensor::from_lengths::<Float32Type>(&[vec![1; 5]], (0..5).map(|i| i as f32).collect(), vec![])?;
/// let mut writer = ShardWriter::create(dir.path(), ShardOptions::default().with_shard_rows(2))?;
/// writer.write(&Dataset::try_new(vec![Column::new("x", t)])?)?;
/// let manifest = writer.finish()?;
/// assert_eq!(manifest.shards.len(), 3);
/// let data = ShardedDataset::open(dir.path())?;
/// assert_eq!(data.sample(4)?.column("x")?.typed_values::<Float32Type>()?, &[4.]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ShardWriter {
    dir: PathBuf,
    options: ShardOptions,
    target: Target,
    /// The manifest as read (the columns, once known).
    manifest: Manifest,
    /// The version of `manifest` as read: the commit replaces it if it is still this.
    base: ManifestVersion,
    /// The shards this writer wrote, under their staged names.
    new: Vec<ShardEntry>,
    staging: Staging,
    next_index: usize,
    current: Option<OpenShard>,
    /// For a URL: the upload of the shards written in `dir` (a directory of this writer's
    /// own) that [`ShardWriter::finish`] makes.
    upload: Option<Box<dyn Upload>>,
}

impl ShardWriter {
    /// Starts a new dataset at `location`: a directory (created if missing) or, with the
    /// `remote` feature, a URL ([`Location`]). A writer to a URL writes its shards into a
    /// local directory of its own (under `TMPDIR`, [`ShardWriter::dir`]); `finish` creates
    /// each in the store under its final name and the manifest by a conditional PUT
    /// (`docs/remote.md`), reaching the store as `ShardOptions::with_remote_options` says.
    ///
    /// # Errors
    /// [`DatasetError::AlreadyThere`] when `location` already holds a manifest (use
    /// [`ShardWriter::append`]); an invalid prefix; a size option of 0 (`shard_rows`,
    /// `shard_bytes`, `batch_bytes`); a URL's store errors, and without the
    /// `remote` feature an [`ArgumentError::InvalidArgument`] naming the URL.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let ds = Dataset::try_new(vec![Column::new("ids", t)])?;
    /// let mut writer = ShardWriter::create(dir.path(), ShardOptions::default())?;
    /// writer.write(&ds)?;
    /// writer.finish()?;
    /// assert!(ShardWriter::create(dir.path(), ShardOptions::default()).is_err());  // exists
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create(location: impl Into<Location>, options: ShardOptions) -> Result<Self> {
        match location.into() {
            Location::Path(dir) => Self::create_dir(&dir, options),
            Location::Url(url) => Self::to_url(&url, Target::Create, options),
        }
    }

    /// A writer of a new dataset in `dir`.
    fn create_dir(dir: &Path, options: ShardOptions) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| Error::from(e).in_file(dir))?;
        let path = dir.join(MANIFEST_NAME);
        if LocalStore::new(dir).load_current()?.0.is_some() {
            return Err(Error::from(DatasetError::AlreadyThere).in_file(path));
        }
        Self::start(dir, options, Target::Create, None)
    }

    /// Appends shards to the dataset at `location` (a directory or a URL, as
    /// [`ShardWriter::create`]); its columns fix the schema. Any number of writers may
    /// append at once: each stages its shards under `_pending/` (a URL's: in the store under
    /// their final names), and [`ShardWriter::finish`] commits them after the shards listed
    /// then (see `docs/shards.md`, concurrency).
    ///
    /// # Errors
    /// [`DatasetError::NothingToAppendTo`] when `location` holds no manifest; the
    /// manifest's errors ([`Manifest::load`]); an invalid prefix; a size option of 0; a URL's as
    /// [`ShardWriter::create`].
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let ds = Dataset::try_new(vec![Column::new("ids", t)])?;
    /// let mut writer = ShardWriter::create(dir.path(), ShardOptions::default())?;
    /// writer.write(&ds)?;
    /// writer.finish()?;
    /// let mut more = ShardWriter::append(dir.path(), ShardOptions::default())?;
    /// more.write(&ds)?;
    /// assert_eq!(more.finish()?.shards.len(), 2);               // the old shard and a new one
    /// assert_eq!(ShardedDataset::open(dir.path())?.num_rows(), 6);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn append(location: impl Into<Location>, options: ShardOptions) -> Result<Self> {
        let dir = match location.into() {
            Location::Path(dir) => dir,
            Location::Url(url) => return Self::to_url(&url, Target::Append, options),
        };
        let dir = dir.as_path();
        let path = dir.join(MANIFEST_NAME);
        if path
            .symlink_metadata()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        {
            return Err(Error::from(DatasetError::NothingToAppendTo).in_file(path));
        }
        let Some(manifest) = (match path.exists() {
            true => LocalStore::new(dir).load_current()?.0,
            false => Some(Manifest::load(&path)?),
        }) else {
            return Err(Error::from(DatasetError::RemovedMeanwhile).in_file(path));
        };
        Self::start(dir, options, Target::Append, Some(manifest))
    }

    /// An independent writer of new shards for the dataset at `location` (a directory,
    /// created if missing, or a URL, as [`ShardWriter::create`]): its shards wait in
    /// `_pending/PREFIX.pending/`, [`ShardWriter::finish`] records them in
    /// `_lodtensor.pending.PREFIX.json` (a URL's: shards created in the store under their
    /// final names, a new pending manifest `_lodtensor.pending.PREFIX.TOKEN.json`), and
    /// [`commit`](fn@super::commit) merges every pending manifest into the dataset. Each
    /// concurrent writer takes its own prefix (a second writer of a prefix waits for the
    /// first to finish).
    ///
    /// # Errors
    /// [`ErrorKind::Io`](crate::ErrorKind::Io); an invalid prefix; a size option of 0; a URL's as
    /// [`ShardWriter::create`].
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let ds = Dataset::try_new(vec![Column::new("ids", t)])?;
    /// use lodtensor::shards::commit;
    /// for worker in ["w0", "w1"] {
    ///     let options = ShardOptions::default().with_prefix(worker);
    ///     let mut writer = ShardWriter::pending(dir.path(), options)?;
    ///     writer.write(&ds)?;
    ///     writer.finish()?;                                    // a pending manifest of its own
    /// }
    /// assert_eq!(commit(dir.path())?.num_rows(), 6);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pending(location: impl Into<Location>, options: ShardOptions) -> Result<Self> {
        Self::in_dir(location.into(), Target::Pending, options)
    }

    /// Replaces the dataset at `location` (a directory, created if missing, or a URL, as
    /// [`ShardWriter::create`]) by the rows this writer writes, whatever it held: its columns
    /// may differ. [`ShardWriter::finish`] replaces the manifest atomically by one that lists
    /// the new shards only, so readers see the old dataset or the new one; the old shards
    /// stay where they are (a reader that opened the old manifest still reads them) until
    /// [`vacuum`](fn@super::vacuum) (of a URL: `vacuum_with`) removes them. Rows another writer commits meanwhile are
    /// replaced too. A dataset without a manifest is created.
    ///
    /// # Errors
    /// As [`ShardWriter::create`], without [`DatasetError::AlreadyThere`]; the current
    /// manifest's errors ([`Manifest::load`]): a dataset is replaced only when it can be read.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let ds = Dataset::try_new(vec![Column::new("ids", t)])?;
    /// for _ in 0..2 {
    ///     let mut writer = ShardWriter::overwrite(dir.path(), ShardOptions::default())?;
    ///     writer.write(&ds)?;
    ///     writer.finish()?;
    /// }
    /// assert_eq!(ShardedDataset::open(dir.path())?.num_rows(), 3);  // the last write's rows
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn overwrite(location: impl Into<Location>, options: ShardOptions) -> Result<Self> {
        Self::in_dir(location.into(), Target::Overwrite, options)
    }

    /// A pending or overwriting writer of `location` (a directory, created if missing, or a
    /// URL).
    fn in_dir(location: Location, target: Target, options: ShardOptions) -> Result<Self> {
        let dir = match location {
            Location::Path(dir) => dir,
            Location::Url(url) => return Self::to_url(&url, target, options),
        };
        let dir = dir.as_path();
        std::fs::create_dir_all(dir).map_err(|e| Error::from(e).in_file(dir))?;
        let (manifest, base) = LocalStore::new(dir).load_current()?;
        if target != Target::Overwrite {
            return Self::start(dir, options, target, manifest);
        }
        // The columns come from the new rows; the commit replaces the manifest read here.
        let mut writer = Self::start(dir, options, target, None)?;
        writer.base = base;
        Ok(writer)
    }

    /// A writer to the URL `url`: a new dataset in a local directory of its own, uploaded
    /// as `target` says by `finish`.
    fn to_url(url: &str, target: Target, options: ShardOptions) -> Result<Self> {
        let upload = stage_url(url, target, &options)?;
        let mut writer = Self::create_dir(upload.local(), options)?;
        writer.upload = Some(upload);
        Ok(writer)
    }

    fn start(
        dir: &Path,
        options: ShardOptions,
        target: Target,
        manifest: Option<Manifest>,
    ) -> Result<Self> {
        check_prefix(&options.prefix)?;
        for (name, size) in [
            ("shard_rows", options.shard_rows),
            ("shard_bytes", options.shard_bytes),
        ] {
            if size == Some(0) {
                return Err(Error::invalid_argument(
                    "ShardWriter",
                    name,
                    0,
                    "at least 1",
                ));
            }
        }
        options.write.check("ShardWriter")?;
        let base = ManifestVersion::of(manifest.as_ref());
        let manifest = manifest.unwrap_or_default();
        let staging = Staging::new(dir, &options.prefix, target == Target::Pending)?;
        let mut next_index = 0;
        let pending = pending_path(dir, &options.prefix);
        if target == Target::Pending {
            next_index = shard_index(&manifest, &options.prefix);
            if pending.exists() {
                let listed = Manifest::load(&pending)?;
                next_index = next_index.max(shard_index(&listed, &options.prefix));
            }
        }
        Ok(ShardWriter {
            dir: dir.to_path_buf(),
            options,
            target,
            manifest,
            base,
            new: Vec::new(),
            staging,
            next_index,
            current: None,
            upload: None,
        })
    }

    /// Appends the rows of `dataset`, closing shards at the budget. The first dataset of a
    /// new dataset fixes the columns; later ones (and appended ones) must match them.
    ///
    /// # Errors
    /// [`ArgumentError::SchemaMismatch`]; the errors of [`DatasetWriter::write`].
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let ds = Dataset::try_new(vec![Column::new("ids", t)])?;
    /// let mut writer = ShardWriter::create(dir.path(), ShardOptions::default().with_shard_rows(2))?;
    /// writer.write(&ds)?;
    /// writer.write(&ds)?;
    /// assert_eq!(writer.finish()?.num_rows(), 6);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write(&mut self, dataset: &Dataset) -> Result<()> {
        let dataset = dataset.with_offset_width(self.options.write.offset_width())?;
        let specs: Vec<ColumnSpec> = dataset
            .columns()
            .iter()
            .map(ColumnSpec::of_column)
            .collect::<Result<_>>()?;
        if self.has_no_schema() {
            self.manifest.columns = specs;
        } else if specs != self.manifest.columns {
            return Err(ArgumentError::SchemaMismatch {
                batch: 0,
                reason: format!(
                    "the dataset's columns are {specs:?}, the sharded dataset's {:?}",
                    self.manifest.columns
                ),
            }
            .into());
        }
        let rows = dataset.num_rows();
        let mut start = 0;
        while start < rows {
            let (shard_rows, shard_bytes) = (self.options.shard_rows, self.options.shard_bytes);
            let shard = self.open_shard()?;
            let mut end = start;
            while end < rows
                && shard_rows.is_none_or(|limit| shard.rows < limit)
                && shard_bytes.is_none_or(|limit| shard.bytes < limit)
            {
                if shard_bytes.is_some() {
                    shard.bytes += row_bytes(&dataset, end);
                }
                shard.rows += 1;
                end += 1;
            }
            let part = dataset.slice_rows(start..end)?;
            shard.writer.write(&part)?;
            for (stats, column) in shard.stats.iter_mut().zip(part.columns()) {
                stats.add_column(column);
            }
            let full = shard_rows.is_some_and(|l| shard.rows >= l)
                || shard_bytes.is_some_and(|l| shard.bytes >= l);
            if full {
                self.close_shard()?;
            }
            start = end;
        }
        Ok(())
    }

    /// Closes the open shard and commits: under the dataset's lock, the staged shards take
    /// their final names after the shards the manifest lists now (which other writers may
    /// have added since this one started) and the manifest is replaced atomically. A pending
    /// writer writes its pending manifest instead. A writer to a URL then uploads its
    /// shards and commits them by a conditional PUT (or records them in a new pending
    /// manifest of the store) and removes its local directory. Returns what it wrote (for a
    /// URL, the store's manifest, or the pending one).
    ///
    /// # Errors
    /// [`ArgumentError::NoSchema`] for a new dataset that was given no dataset;
    /// [`ArgumentError::SchemaMismatch`] when the dataset's columns changed meanwhile;
    /// [`DatasetError::CreatedMeanwhile`] when another writer created the dataset meanwhile,
    /// [`DatasetError::RemovedMeanwhile`] when the dataset appended to was removed; I/O errors. The
    /// previous manifest is then untouched and this writer's shards are removed.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let ds = Dataset::try_new(vec![Column::new("ids", t)])?;
    /// let mut writer = ShardWriter::create(dir.path(), ShardOptions::default())?;
    /// writer.write(&ds)?;
    /// assert!(!dir.path().join("_lodtensor.json").exists());   // the manifest comes last
    /// let manifest = writer.finish()?;
    /// assert_eq!(ShardedDataset::open(dir.path())?.manifest(), &manifest);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn finish(mut self) -> Result<Manifest> {
        self.close_shard()?;
        if self.has_no_schema() {
            return Err(ArgumentError::NoSchema.into());
        }
        let written = match self.target {
            Target::Pending => self.finish_pending()?,
            Target::Create | Target::Append | Target::Overwrite => {
                let store = LocalStore::new(&self.dir);
                // The manifest as read: none for a new dataset (or one replaced).
                let read = (self.target == Target::Append).then(|| self.manifest.clone());
                let base = (read, self.base.clone());
                commit_with(&store, base, |current, store| self.build(current, store))?
            }
        };
        self.staging.written.clear();
        match self.upload.take() {
            Some(upload) => upload.finish(),
            None => Ok(written),
        }
    }

    /// The commit of this writer's shards after those of `current`, the manifest now.
    fn build(&self, current: Option<&Manifest>, store: &LocalStore) -> Result<Commit> {
        let path = self.dir.join(MANIFEST_NAME);
        let mut manifest = match (current, &self.target) {
            (Some(_), Target::Create) => {
                return Err(Error::from(DatasetError::CreatedMeanwhile).in_file(path));
            }
            (None, Target::Append) => {
                return Err(Error::from(DatasetError::RemovedMeanwhile).in_file(path));
            }
            (Some(m), Target::Append | Target::Pending) => m.clone(),
            (_, _) => Manifest {
                columns: self.manifest.columns.clone(),
                ..Manifest::default()
            },
        };
        if manifest.columns != self.manifest.columns {
            return Err(ArgumentError::SchemaMismatch {
                batch: 0,
                reason: format!(
                    "the sharded dataset's columns changed meanwhile to {:?}",
                    manifest.columns
                ),
            }
            .into());
        }
        let mut publish = Vec::with_capacity(self.new.len());
        // A replaced dataset's shards keep their files (readers of the old manifest still
        // map them): the new shards take names no file has (`free`).
        let mut names = ShardNames::of(&manifest);
        for entry in &self.new {
            let name = names.free(&self.options.prefix, None, store);
            publish.push((self.staging.rel.join(&entry.file), name.clone()));
            let entry = ShardEntry {
                file: name,
                ..entry.clone()
            };
            names.push(&mut manifest, entry);
        }
        let cleanup = vec![self.staging.rel.clone()];
        let put = &mut put_local(&self.dir);
        let extended = current.filter(|_| self.target != Target::Overwrite);
        index_files(extended, &mut manifest, &self.dir, &publish, put)?;
        Ok(Commit {
            manifest,
            publish,
            merged: Vec::new(),
            cleanup,
        })
    }

    /// Adds this writer's shards to its pending manifest, under the dataset's lock (so that
    /// a commit never merges half of it).
    fn finish_pending(&self) -> Result<Manifest> {
        let _lock = LocalStore::new(&self.dir).lock()?;
        let path = pending_path(&self.dir, &self.options.prefix);
        let mut pending = match path.exists() {
            true => Manifest::load(&path)?,
            false => Manifest {
                columns: self.manifest.columns.clone(),
                ..Manifest::default()
            },
        };
        pending.shards.extend_from_slice(&self.new);
        pending.write(&path)?;
        Ok(pending)
    }

    /// Whether no columns are known yet (a new dataset before its first data).
    fn has_no_schema(&self) -> bool {
        self.manifest.columns.is_empty() && self.manifest.shards.is_empty() && self.new.is_empty()
    }

    /// The dataset directory (a writer to a URL's: the local directory its shards are
    /// written into before `finish` uploads them).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let ds = Dataset::try_new(vec![Column::new("ids", t)])?;
    /// let writer = ShardWriter::create(dir.path(), ShardOptions::default())?;
    /// assert_eq!(writer.dir(), dir.path());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn open_shard(&mut self) -> Result<&mut OpenShard> {
        if self.current.is_none() {
            let file = format!("{}-{:05}.arrow", self.options.prefix, self.next_index);
            self.next_index += 1;
            let path = self.dir.join(&self.staging.rel).join(&file);
            let writer = DatasetWriter::create(path, self.options.write.clone())?;
            let columns = self.manifest.columns.len();
            self.current = Some(OpenShard {
                writer,
                file,
                rows: 0,
                bytes: 0,
                stats: vec![ColumnStats::default(); columns],
            });
        }
        Ok(self.current.as_mut().expect("opened above"))
    }

    fn close_shard(&mut self) -> Result<()> {
        let Some(shard) = self.current.take() else {
            return Ok(());
        };
        let path = shard.writer.path();
        let summary = shard.writer.finish()?;
        self.staging.written.push(path.clone());
        self.new.push(ShardEntry {
            file: shard.file,
            rows: summary.rows,
            batches: summary.batches,
            bytes: summary.bytes,
            crc32c: file_crc32c(&path)?,
            columns: shard.stats,
        });
        Ok(())
    }
}

/// The pending manifest of the writer with `prefix`.
pub(crate) fn pending_path(dir: &Path, prefix: &str) -> PathBuf {
    dir.join(format!("{PENDING_PREFIX}{prefix}.json"))
}

/// One past the highest index of the shards named `PREFIX-NNNNN.arrow` in `manifest`.
fn shard_index(manifest: &Manifest, prefix: &str) -> usize {
    next_index(manifest.shards.iter().map(|s| s.file.as_str()), prefix)
}

/// One past the highest index of the names `PREFIX-NNNNN.arrow` among `names`.
pub(super) fn next_index<'a>(names: impl Iterator<Item = &'a str>, prefix: &str) -> usize {
    names
        .filter_map(|file| {
            file.strip_prefix(prefix)?
                .strip_prefix('-')?
                .strip_suffix(".arrow")?
                .parse::<usize>()
                .ok()
        })
        .map(|i| i + 1)
        .max()
        .unwrap_or(0)
}
