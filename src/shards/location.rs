//! Where a sharded dataset lives: a local directory or a URL (`s3://bucket/prefix/`, …),
//! decided once, here, when a string becomes a [`Location`], whether or not the `remote`
//! feature that reads URLs is compiled in.
//!
//! A string is a URL when it starts with a scheme of two or more characters (a letter, then
//! letters, digits, `+`, `-` or `.`) followed by `://`. Everything else is a path: relative
//! paths with a `:` (`data:v1/shards`), Windows-like paths (`C:\data`, `C://data`: a scheme
//! of one letter is a drive). A `file://` URL is the local path it names
//! (`file:///data/shards` and `file://localhost/data/shards` are `/data/shards`, `%XX`
//! escapes decoded). A [`Path`] is always a path: only strings are parsed.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::shards::manifest::Manifest;
use crate::shards::reader::ShardedDataset;
use crate::shards::writer::{ShardOptions, Target};

/// Where a sharded dataset lives: a local directory, or a URL in object storage.
///
/// Made from a string by [`Location::parse`] (or `From<&str>`), from a [`Path`] as a local
/// directory; [`ShardedDataset::open`](super::ShardedDataset::open),
/// [`commit`](fn@super::commit) and [`ShardWriter`](super::ShardWriter) take either.
///
/// # Example
/// ```
/// use lodtensor::shards::Location;
/// use std::path::Path;
/// assert_eq!(Location::from("s3://bucket/data/"), Location::Url("s3://bucket/data/".into()));
/// assert_eq!(Location::from("data/shards"), Location::Path("data/shards".into()));
/// assert_eq!(Location::from("file:///data/shards"), Location::Path("/data/shards".into()));
/// assert_eq!(Location::from("C:\\data"), Location::Path("C:\\data".into()));
/// assert!(Location::from(Path::new("s3://not-parsed")).as_path().is_some());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Location {
    /// A local directory.
    Path(PathBuf),
    /// A URL of a store (`s3://`, `gs://`, `az://`, `http(s)://`, …), as written.
    Url(String),
}

impl Location {
    /// The location that `text` names: a URL when it starts with `scheme://` (a scheme of
    /// two or more characters other than `file`), else a local path (module docs).
    ///
    /// # Example
    /// ```
    /// use lodtensor::shards::Location;
    /// assert!(Location::parse("gs://bucket/x/").is_url());
    /// assert!(!Location::parse("relative:with/colon").is_url());
    /// assert_eq!(Location::parse("file://localhost/a%20b").as_path(), Some("/a b".as_ref()));
    /// ```
    pub fn parse(text: &str) -> Location {
        match url_scheme(text).as_deref() {
            None => Location::Path(PathBuf::from(text)),
            Some("file") => match file_url_path(text) {
                Some(path) => Location::Path(path),
                None => Location::Url(text.to_owned()),
            },
            Some(_) => Location::Url(text.to_owned()),
        }
    }

    /// Whether this is a URL.
    ///
    /// # Example
    /// ```
    /// assert!(lodtensor::shards::Location::from("s3://b/p/").is_url());
    /// ```
    pub fn is_url(&self) -> bool {
        matches!(self, Location::Url(_))
    }

    /// The local directory, if this is one.
    ///
    /// # Example
    /// ```
    /// use lodtensor::shards::Location;
    /// assert_eq!(Location::from("data").as_path(), Some(std::path::Path::new("data")));
    /// assert_eq!(Location::from("s3://b/").as_path(), None);
    /// ```
    pub fn as_path(&self) -> Option<&Path> {
        match self {
            Location::Path(path) => Some(path),
            Location::Url(_) => None,
        }
    }

    /// The URL, if this is one.
    ///
    /// # Example
    /// ```
    /// use lodtensor::shards::Location;
    /// assert_eq!(Location::from("s3://b/").as_url(), Some("s3://b/"));
    /// assert_eq!(Location::from("data").as_url(), None);
    /// ```
    pub fn as_url(&self) -> Option<&str> {
        match self {
            Location::Path(_) => None,
            Location::Url(url) => Some(url),
        }
    }
}

impl std::fmt::Display for Location {
    /// The path or the URL, as written.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Path(path) => write!(f, "{}", path.display()),
            Location::Url(url) => f.write_str(url),
        }
    }
}

impl From<&str> for Location {
    /// [`Location::parse`].
    fn from(text: &str) -> Self {
        Location::parse(text)
    }
}

impl From<String> for Location {
    /// [`Location::parse`].
    fn from(text: String) -> Self {
        Location::parse(&text)
    }
}

impl From<&String> for Location {
    /// [`Location::parse`].
    fn from(text: &String) -> Self {
        Location::parse(text)
    }
}

impl From<&OsStr> for Location {
    /// [`Location::parse`] of the text, a path when it is not UTF-8 (a command line's
    /// argument).
    fn from(text: &OsStr) -> Self {
        match text.to_str() {
            Some(text) => Location::parse(text),
            None => Location::Path(PathBuf::from(text)),
        }
    }
}

impl From<&Path> for Location {
    /// A local directory: a [`Path`] is never parsed as a URL.
    fn from(path: &Path) -> Self {
        Location::Path(path.to_path_buf())
    }
}

impl From<PathBuf> for Location {
    /// A local directory: a [`Path`] is never parsed as a URL.
    fn from(path: PathBuf) -> Self {
        Location::Path(path)
    }
}

impl From<&PathBuf> for Location {
    /// A local directory: a [`Path`] is never parsed as a URL.
    fn from(path: &PathBuf) -> Self {
        Location::Path(path.clone())
    }
}

impl From<&Location> for Location {
    /// A copy.
    fn from(location: &Location) -> Self {
        location.clone()
    }
}

/// The scheme of `url`, lower case, if it starts with one (`scheme://…`, the scheme two
/// characters or more, so that a drive letter is not one).
pub(crate) fn url_scheme(url: &str) -> Option<String> {
    let (scheme, _) = url.split_once("://")?;
    let mut chars = scheme.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && scheme.len() >= 2
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    valid.then(|| scheme.to_ascii_lowercase())
}

/// The local path of the `file://` URL `url`: its host empty or `localhost`, its path
/// absolute, `%XX` escapes decoded; `None` for another host or a bad escape.
fn file_url_path(url: &str) -> Option<PathBuf> {
    let rest = &url[url.find("://")? + 3..];
    let path = match rest.find('/') {
        Some(0) => rest,
        Some(at) if rest[..at].eq_ignore_ascii_case("localhost") => &rest[at..],
        _ => return None,
    };
    let bytes = path.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            decoded.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            decoded.push(bytes[i]);
            i += 1;
        }
    }
    #[cfg(unix)]
    let path = {
        use std::os::unix::ffi::OsStringExt;
        PathBuf::from(std::ffi::OsString::from_vec(decoded))
    };
    #[cfg(not(unix))]
    let path = PathBuf::from(String::from_utf8(decoded).ok()?);
    Some(path)
}

/// Whether `location` is a URL (`scheme://…`, not `file://`) rather than a local path:
/// [`Location::parse`]'s decision.
///
/// # Example
/// ```
/// use lodtensor::shards::is_url;
/// assert!(is_url("s3://bucket/data/"));
/// assert!(!is_url("data/shards"));
/// assert!(!is_url("file:///data/shards"));
/// ```
pub fn is_url(location: &str) -> bool {
    Location::parse(location).is_url()
}

/// A writer's shards bound for a URL: written into a local directory of their own, then
/// uploaded and committed (or recorded as pending) by `finish`; the directory is removed
/// then, or when the upload is dropped unfinished.
pub(crate) trait Upload: std::fmt::Debug + Send + Sync {
    /// The local directory the shards are written into.
    fn local(&self) -> &Path;
    /// Uploads the dataset written in [`Upload::local`]: the manifest committed (or the
    /// pending manifest recorded).
    fn finish(self: Box<Self>) -> Result<Manifest>;
}

/// The upload of a writer of `target` to the URL `url`, its local directory made; a
/// `Create` refused now where a dataset is, an `Append` where none is.
#[cfg(feature = "remote")]
pub(crate) fn stage_url(
    url: &str,
    target: Target,
    options: &ShardOptions,
) -> Result<Box<dyn Upload>> {
    crate::shards::remote::stage(url, target, options)
}

/// Without the `remote` feature: an argument error naming the URL.
#[cfg(not(feature = "remote"))]
pub(crate) fn stage_url(
    url: &str,
    _target: Target,
    _options: &ShardOptions,
) -> Result<Box<dyn Upload>> {
    Err(no_remote("ShardWriter", url))
}

/// The dataset at the URL `url`, reached with the environment's credentials.
#[cfg(feature = "remote")]
pub(crate) fn open_url_default(url: &str) -> Result<ShardedDataset> {
    use crate::shards::remote_options::RemoteOptions;
    crate::shards::remote::open_remote(url, &RemoteOptions::default())
}

/// The pending manifests at the URL `url` committed with the environment's credentials.
#[cfg(feature = "remote")]
pub(crate) fn commit_url_default(url: &str) -> Result<Manifest> {
    use crate::shards::remote_options::RemoteOptions;
    crate::shards::remote::commit_with(Location::Url(url.to_owned()), &RemoteOptions::default())
}

/// The lengths index of the dataset at the URL `url` added or rebuilt with the
/// environment's credentials.
#[cfg(feature = "remote")]
pub(crate) fn index_url_default(url: &str) -> Result<Manifest> {
    use crate::shards::remote_options::RemoteOptions;
    crate::shards::remote::index_remote(url, &RemoteOptions::default())
}

/// Without the `remote` feature: an argument error naming the URL.
#[cfg(not(feature = "remote"))]
pub(crate) fn index_url_default(url: &str) -> Result<Manifest> {
    Err(no_remote("index", url))
}

/// Without the `remote` feature: an argument error naming the URL.
#[cfg(not(feature = "remote"))]
pub(crate) fn open_url_default(url: &str) -> Result<ShardedDataset> {
    Err(no_remote("ShardedDataset::open", url))
}

/// Without the `remote` feature: an argument error naming the URL.
#[cfg(not(feature = "remote"))]
pub(crate) fn commit_url_default(url: &str) -> Result<Manifest> {
    Err(no_remote("commit", url))
}

/// The error of a URL given to a build without the `remote` feature.
#[cfg(not(feature = "remote"))]
pub(crate) fn no_remote(function: &'static str, url: &str) -> crate::error::Error {
    crate::error::Error::invalid_argument(
        function,
        "location",
        url,
        "a directory: this lodtensor was built without the `remote` feature (URLs)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> Location {
        Location::Path(PathBuf::from(text))
    }

    #[test]
    fn urls_are_told_from_paths_once() {
        for url in [
            "s3://b/p/",
            "S3://b/p/",
            "gs://b/",
            "az://c/p",
            "http://h:9000/x/",
            "https://h/x",
            "s3+custom://b",
            "memory://x",
        ] {
            assert_eq!(Location::parse(url), Location::Url(url.to_owned()), "{url}");
        }
        for local in [
            "data/shards",
            "/abs/dir/",
            "relative:with/colon",
            "a:b",
            "C:\\data\\shards",
            "C:/data",
            "C://data",
            "://nothing",
            "1s3://digit-first",
            "s 3://space",
            "",
            "./s3://nested",
        ] {
            assert_eq!(Location::parse(local), path(local), "{local}");
        }
    }

    #[test]
    fn a_file_url_is_its_local_path() {
        assert_eq!(Location::parse("file:///data/x/"), path("/data/x/"));
        assert_eq!(Location::parse("FILE:///data"), path("/data"));
        assert_eq!(Location::parse("file://localhost/d"), path("/d"));
        assert_eq!(Location::parse("file:///a%20b%2Fc"), path("/a b/c"));
        // Another host, a relative path or a bad escape name no local path: left a URL,
        // which no store accepts.
        for url in [
            "file://host/d",
            "file://relative",
            "file:///bad%zz",
            "file:///cut%2",
        ] {
            assert_eq!(Location::parse(url), Location::Url(url.to_owned()), "{url}");
        }
    }

    #[test]
    fn a_path_is_never_parsed() {
        assert_eq!(Location::from(Path::new("s3://b")), path("s3://b"));
        assert_eq!(
            Location::from(PathBuf::from("file:///x")),
            path("file:///x")
        );
        assert!(Location::from(OsStr::new("s3://b")).is_url());
        assert_eq!(Location::from("s3://b/").to_string(), "s3://b/");
    }

    /// Without the `remote` feature a URL is refused by every call, naming it.
    #[cfg(not(feature = "remote"))]
    #[test]
    fn without_the_remote_feature_a_url_is_an_argument_error() {
        use crate::error::ErrorKind;
        use crate::shards::{ShardOptions, ShardWriter, commit, index};
        let url = "s3://bucket/data/";
        let errors = [
            ShardedDataset::open(url).unwrap_err(),
            commit(url).unwrap_err(),
            index(url).unwrap_err(),
            ShardWriter::create(url, ShardOptions::default())
                .err()
                .unwrap(),
            ShardWriter::pending(url, ShardOptions::default())
                .err()
                .unwrap(),
        ];
        for err in errors {
            assert!(matches!(err.kind(), ErrorKind::Argument(_)), "{err}");
            assert!(err.to_string().contains(url), "{err}");
            assert!(err.to_string().contains("`remote` feature"), "{err}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_non_utf8_argument_is_a_path() {
        use std::os::unix::ffi::OsStrExt;
        let raw = OsStr::from_bytes(b"s3://\xff");
        assert_eq!(Location::from(raw), Location::Path(PathBuf::from(raw)));
    }
}
