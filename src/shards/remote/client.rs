//! The object store behind a dataset URL: the store built from the URL and the storage
//! options (the environment's `AWS_*`, `GOOGLE_*`, `AZURE_*` variables first), the async
//! runtime its requests run on, and its errors sorted into this crate's kinds.
//!
//! A process that forks (DataLoader workers) must not use its parent's runtime or
//! connections: the runtime and the store are made again, lazily, in a process whose id
//! differs from the one that made them.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use object_store::path::Path as StorePath;
use object_store::{
    BackoffConfig, ObjectStore, ObjectStoreExt as _, PutMode, PutOptions, PutPayload, RetryConfig,
    UpdateVersion,
};

use super::connector::SameOriginConnector;
use crate::error::{Error, Result};
use crate::shards::location::url_scheme;

/// How many times a request is retried after a transient fault (a dropped connection, a
/// timeout, a 5xx), with exponential backoff from 100 ms.
const MAX_RETRIES: usize = 8;

/// The URL schemes a dataset can live at.
const SCHEMES: &[&str] = &[
    "s3", "s3a", "gs", "az", "adl", "azure", "abfs", "abfss", "http", "https",
];

/// A dataset's place in an object store: the store, and the prefix of the dataset's objects.
#[derive(Debug)]
pub(crate) struct Remote {
    /// The dataset's URL, ending in `/`.
    url: String,
    /// The store's configuration, as given (applied after the environment's).
    options: Vec<(String, String)>,
    /// Where the dataset's objects are in the store.
    prefix: StorePath,
    /// The runtime and the store of the process that made them.
    connection: Mutex<Option<Arc<Connection>>>,
}

/// A runtime and a store, usable in the process that made them.
#[derive(Debug)]
struct Connection {
    pid: u32,
    runtime: tokio::runtime::Runtime,
    store: Arc<dyn ObjectStore>,
}

/// An object's version, for a conditional replace.
pub(crate) type ETag = Option<String>;

impl Remote {
    /// The dataset at `url` (`s3://bucket/prefix/`, `gs://`, `az://`, `http(s)://`), with
    /// `options` (`object_store`'s configuration keys, such as `aws_endpoint`).
    ///
    /// # Errors
    /// [`ArgumentError::InvalidArgument`](crate::ArgumentError::InvalidArgument) for a URL
    /// of another scheme, an unknown option or a configuration the store refuses.
    pub(crate) fn new(url: &str, options: &[(String, String)]) -> Result<Self> {
        let scheme = url_scheme(url).filter(|s| SCHEMES.contains(&s.as_str()));
        let Some(scheme) = scheme else {
            return Err(Error::invalid_argument(
                "open_url",
                "url",
                url,
                format!("a URL of scheme {}", SCHEMES.join(", ")),
            ));
        };
        let url = format!("{}/", url.trim_end_matches('/'));
        let prefix = match scheme.as_str() {
            "http" | "https" => StorePath::default(),
            _ => {
                let rest = &url[scheme.len() + 3..];
                let path = rest.split_once('/').map_or("", |(_, p)| p);
                StorePath::parse(path).map_err(|e| {
                    Error::invalid_argument("open_url", "url", &url, format!("a valid path ({e})"))
                })?
            }
        };
        let remote = Remote {
            url,
            options: options.to_vec(),
            prefix,
            connection: Mutex::new(None),
        };
        remote.connection()?;
        Ok(remote)
    }

    /// The dataset's URL, ending in `/`.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// The URL of the dataset's object `name`, for messages.
    pub(crate) fn url_of(&self, name: &str) -> String {
        format!("{}{name}", self.url)
    }

    /// This process's runtime and store, made on first use in this process.
    fn connection(&self) -> Result<Arc<Connection>> {
        // The lock is held only to read or swap the slot, never while building, so that a
        // child forked at any moment is unlikely to find it held by a thread it lacks.
        let slot = || self.connection.lock().unwrap_or_else(|e| e.into_inner());
        let pid = std::process::id();
        if let Some(c) = slot().as_ref().filter(|c| c.pid == pid) {
            return Ok(c.clone());
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("lodtensor-remote")
            .enable_all()
            .build()
            .map_err(|e| Error::from(e).in_file(&self.url))?;
        let store = build_store(&self.url, &self.options)?;
        let built = Arc::new(Connection {
            pid,
            runtime,
            store,
        });
        let mut slot = slot();
        match slot.as_ref() {
            // Another thread built one meanwhile: the one not kept shuts down as it drops.
            Some(c) if c.pid == pid => Ok(c.clone()),
            _ => {
                // A forked child's copy of its parent's: the runtime's threads do not exist
                // here, so it cannot be shut down; it is left as it is.
                std::mem::forget(slot.replace(built.clone()));
                Ok(built)
            }
        }
    }

    /// Runs `request` on the store, waiting for it.
    fn run<T, F: Future<Output = object_store::Result<T>>>(
        &self,
        request: impl FnOnce(Arc<dyn ObjectStore>) -> F,
    ) -> Result<object_store::Result<T>> {
        let c = self.connection()?;
        Ok(c.runtime.block_on(request(c.store.clone())))
    }

    /// The store's path of the dataset's object `name`.
    pub(crate) fn location(&self, name: &str) -> StorePath {
        self.prefix.clone().join(name)
    }

    /// The object `name` whole and its ETag, or `None` if there is none; refused unread if
    /// larger than `limit` bytes.
    pub(crate) fn get(&self, name: &str, limit: u64) -> Result<Option<(Bytes, ETag)>> {
        self.get_at(self.location(name), &self.url_of(name), limit)
    }

    /// [`Remote::get`] of the store's object at `location` (any path of the store, named
    /// `url` in errors).
    pub(crate) fn get_at(
        &self,
        location: StorePath,
        url: &str,
        limit: u64,
    ) -> Result<Option<(Bytes, ETag)>> {
        let got = self.run(|store| async move {
            let result = store.get(&location).await?;
            let e_tag = result.meta.e_tag.clone();
            if result.meta.size > limit {
                return Ok(Err(result.meta.size));
            }
            Ok(Ok((result.bytes().await?, e_tag)))
        })?;
        match got {
            Ok(Ok(found)) => Ok(Some(found)),
            Ok(Err(size)) => Err(Error::from(std::io::Error::other(format!(
                "is {size} bytes, larger than the limit of {limit} bytes"
            )))
            .in_file(url)),
            Err(e @ object_store::Error::NotFound { .. }) if !no_bucket(&e) => Ok(None),
            Err(e) => Err(store_error(e, url)),
        }
    }

    /// Runs `download` with the store and the object `name`'s location.
    pub(crate) fn with_object<T, F: Future<Output = Result<T>>>(
        &self,
        name: &str,
        download: impl FnOnce(Arc<dyn ObjectStore>, StorePath) -> F,
    ) -> Result<T> {
        let c = self.connection()?;
        let location = self.location(name);
        c.runtime.block_on(download(c.store.clone(), location))
    }

    /// Runs `work` with the store (requests of several objects: see [`Remote::location`]).
    pub(crate) fn with_store<T, F: Future<Output = Result<T>>>(
        &self,
        work: impl FnOnce(Arc<dyn ObjectStore>) -> F,
    ) -> Result<T> {
        let c = self.connection()?;
        c.runtime.block_on(work(c.store.clone()))
    }

    /// Writes the object `name` if it does not exist ([`Put::Create`]) or is still a
    /// version ([`Put::Update`]); `Ok(false)` when the condition failed.
    pub(crate) fn put(&self, name: &str, bytes: Bytes, mode: Put) -> Result<bool> {
        let location = self.location(name);
        let mode = match mode {
            Put::Create => PutMode::Create,
            Put::Update(e_tag) => PutMode::Update(UpdateVersion {
                e_tag: Some(e_tag),
                version: None,
            }),
        };
        let options = PutOptions::from(mode);
        let put = self.run(|store| async move {
            store
                .put_opts(&location, PutPayload::from(bytes), options)
                .await
        })?;
        match put {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. })
            | Err(object_store::Error::Precondition { .. }) => Ok(false),
            Err(e) => Err(store_error(e, &self.url_of(name))),
        }
    }

    /// The size and ETag of the object `name`, or `None` if there is none (one HEAD request).
    pub(crate) fn head(&self, name: &str) -> Result<Option<(u64, ETag)>> {
        let location = self.location(name);
        match self.run(|store| async move { store.head(&location).await })? {
            Ok(meta) => Ok(Some((meta.size, meta.e_tag))),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(store_error(e, &self.url_of(name))),
        }
    }

    /// Whether the object `name` exists.
    pub(crate) fn exists(&self, name: &str) -> Result<bool> {
        let location = self.location(name);
        match self.run(|store| async move { store.head(&location).await })? {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(store_error(e, &self.url_of(name))),
        }
    }

    /// The names of the dataset's objects (directly under its prefix) that start with
    /// `start`, sorted.
    pub(crate) fn list(&self, start: &str) -> Result<Vec<String>> {
        let sized = self.list_sized(start)?;
        Ok(sized.into_iter().map(|(name, _)| name).collect())
    }

    /// [`Remote::list`] with each object's size.
    pub(crate) fn list_sized(&self, start: &str) -> Result<Vec<(String, u64)>> {
        let listed = self.list_modified(start)?;
        Ok(listed
            .into_iter()
            .map(|(name, size, _)| (name, size))
            .collect())
    }

    /// [`Remote::list`] with each object's size and when it was last modified (the
    /// epoch for a time before it).
    pub(crate) fn list_modified(&self, start: &str) -> Result<Vec<(String, u64, SystemTime)>> {
        let prefix = self.prefix.clone();
        let listed =
            self.run(|store| async move { store.list_with_delimiter(Some(&prefix)).await })?;
        let listed = listed.map_err(|e| store_error(e, &self.url))?;
        let modified = |object: &object_store::ObjectMeta| {
            let seconds = u64::try_from(object.last_modified.timestamp());
            SystemTime::UNIX_EPOCH + seconds.map_or(Duration::ZERO, Duration::from_secs)
        };
        let mut names: Vec<(String, u64, SystemTime)> = (listed.objects.iter())
            .filter_map(|object| Some((object.location.filename()?, object)))
            .filter(|(name, _)| name.starts_with(start))
            .map(|(name, object)| (name.to_owned(), object.size, modified(object)))
            .collect();
        names.sort();
        Ok(names)
    }

    /// Removes the object `name`, if there.
    pub(crate) fn delete(&self, name: &str) -> Result<()> {
        let location = self.location(name);
        match self.run(|store| async move { store.delete(&location).await })? {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(store_error(e, &self.url_of(name))),
        }
    }
}

/// How [`Remote::put`] writes.
#[derive(Clone, Debug)]
pub(crate) enum Put {
    /// Only if there is no such object (`If-None-Match: *`).
    Create,
    /// Only if the object is still this version (`If-Match: <etag>`).
    Update(String),
}

/// The store of `url`, configured from the environment and then `options`, with retries.
fn build_store(url: &str, options: &[(String, String)]) -> Result<Arc<dyn ObjectStore>> {
    let retry = RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(15),
            base: 2.0,
        },
        max_retries: MAX_RETRIES,
        retry_timeout: Duration::from_secs(180),
    };
    let bad = |key: &str, e: &dyn std::fmt::Display| {
        Error::invalid_argument(
            "open_url",
            "storage_options",
            key,
            format!("a configuration key of the URL's store ({e})"),
        )
    };
    // An HTTP store joins names to its URL's path: `path/` would give `path//NAME`.
    let base = match url_scheme(url).as_deref() {
        Some("http" | "https") => url.trim_end_matches('/'),
        _ => url,
    };
    macro_rules! build {
        ($builder:expr, $key:ty) => {{
            let mut builder = $builder
                .with_url(base)
                .with_retry(retry)
                .with_http_connector(SameOriginConnector);
            for (key, value) in options {
                let k: $key = key.to_ascii_lowercase().parse().map_err(|e| bad(key, &e))?;
                builder = builder.with_config(k, value.clone());
            }
            Arc::new(builder.build().map_err(|e| store_error(e, url))?) as Arc<dyn ObjectStore>
        }};
    }
    use object_store::{aws, azure, gcp, http};
    Ok(match url_scheme(url).as_deref() {
        Some("s3" | "s3a") => build!(aws::AmazonS3Builder::from_env(), aws::AmazonS3ConfigKey),
        Some("gs") => build!(
            gcp::GoogleCloudStorageBuilder::from_env(),
            gcp::GoogleConfigKey
        ),
        Some("http" | "https") => build!(http::HttpBuilder::new(), object_store::ClientConfigKey),
        _ => build!(
            azure::MicrosoftAzureBuilder::from_env(),
            azure::AzureConfigKey
        ),
    })
}

/// Whether `e` says the bucket (or container) does not exist.
fn no_bucket(e: &object_store::Error) -> bool {
    let text = e.to_string();
    text.contains("NoSuchBucket") || text.contains("ContainerNotFound")
}

/// `e`, a store's error on the object at `url`, as this crate's I/O error naming the URL,
/// saying what to check and what the store said (its error code and message, when it sent
/// them).
pub(crate) fn store_error(e: object_store::Error, url: &str) -> Error {
    use object_store::Error as E;
    use std::io::ErrorKind as Kind;
    let text = e.to_string();
    if error_chain(&e).any(|cause| cause.contains("scheme is not allowed")) {
        // reqwest's refusal of plain HTTP when `allow_http` is not set: no request was made.
        return Error::invalid_argument(
            "open_url",
            "storage_options",
            "a plain http:// endpoint",
            "the storage option aws_allow_http=\"true\" with it (allow_http for an http:// dataset)",
        )
        .in_file(url);
    }
    let (kind, hint) = match &e {
        E::NotFound { .. } if no_bucket(&e) => (Kind::NotFound, "no such bucket"),
        E::NotFound { .. } => (Kind::NotFound, "not found (check the prefix)"),
        E::PermissionDenied { .. } => (
            Kind::PermissionDenied,
            "access denied (check the credentials' permissions on the bucket)",
        ),
        E::Unauthenticated { .. } => (
            Kind::PermissionDenied,
            "not authenticated (check the credentials: storage_options or AWS_ACCESS_KEY_ID \
             and AWS_SECRET_ACCESS_KEY, GOOGLE_APPLICATION_CREDENTIALS, AZURE_STORAGE_*)",
        ),
        E::UnknownConfigurationKey { .. } => (Kind::InvalidInput, "bad storage option"),
        // No key given, and the instance metadata service (the last credential provider)
        // is not there either.
        _ if text.contains("169.254.169.254") => (
            Kind::PermissionDenied,
            "no credentials found (set storage_options or AWS_ACCESS_KEY_ID and \
             AWS_SECRET_ACCESS_KEY; the instance metadata service did not answer)",
        ),
        _ if error_chain(&e).any(|cause| cause.contains("certificate")) => (
            Kind::Other,
            "the server's TLS certificate was refused (for a private certificate authority \
             set SSL_CERT_FILE; to accept any, allow_invalid_certificates=\"true\")",
        ),
        _ if text.contains("timed out") => (
            Kind::TimedOut,
            "timed out after retries (check the endpoint and the network)",
        ),
        _ => (
            Kind::Other,
            "failed after retries (check the endpoint and the network)",
        ),
    };
    // The transport's own reason is often only in the innermost source.
    let root = error_chain(&e)
        .last()
        .filter(|root| !text.contains(root.as_str()));
    let said = match (xml_field(&text, "Code"), xml_field(&text, "Message"), root) {
        (Some(code), Some(message), _) => format!("{code}: {message}"),
        (_, _, Some(root)) => {
            let root = crate::shards::parse::cut(&root, MAX_DETAIL_CHARS);
            format!(
                "{}: {root}",
                crate::shards::parse::cut(&text, MAX_DETAIL_CHARS)
            )
        }
        _ => crate::shards::parse::cut(&text, MAX_DETAIL_CHARS),
    };
    Error::from(std::io::Error::new(kind, format!("{hint}: {said}"))).in_file(url)
}

/// The texts of `e` and of its sources, outermost first (a transport's reason is often
/// only in a source: "builder error" outside, "URL scheme is not allowed" inside).
fn error_chain<'a>(e: &'a (dyn std::error::Error + 'static)) -> impl Iterator<Item = String> + 'a {
    std::iter::successors(Some(e), |e| e.source()).map(ToString::to_string)
}

/// The longest part of a store's own error text an error shows.
const MAX_DETAIL_CHARS: usize = 300;

/// The text of the XML element `<name>` in `text` (S3's and Azure's error bodies).
fn xml_field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let start = text.find(&format!("<{name}>"))? + name.len() + 2;
    let len = text[start..].find(&format!("</{name}>"))?;
    Some(&text[start..start + len])
}
