//! Inputs in object storage (the `remote` feature): a URL names one object
//! (`s3://bucket/a.txt`), every object under a prefix (`s3://bucket/corpus/`, sorted, names
//! starting with `.` or `_` skipped) or the objects of a glob over that listing
//! (`s3://bucket/corpus/**/*.jsonl`: `*` and `?` within a name, `**` across names, `[…]` a
//! class). Each object is read whole when its unit is read, through the crate's own store
//! client, and refused at the listing if it is larger than [`OBJECT_LIMIT`].

use std::sync::Arc;

use bytes::Bytes;
use futures_util::TryStreamExt as _;
use object_store::path::Path as StorePath;
use object_store::{ObjectMeta, ObjectStoreExt as _};

use crate::error::{Error, Result};
use crate::shards::RemoteOptions;
use crate::shards::remote::{Remote, store_error};

/// An object larger than this is refused (its documents are read whole).
pub(super) const OBJECT_LIMIT: u64 = 1 << 30;

/// One object of an input URL.
#[derive(Clone, Debug)]
pub(super) struct Object {
    /// The store of the object's bucket.
    remote: Arc<Remote>,
    /// The object's path in the store.
    location: StorePath,
    /// The object's URL: its `source`, and the name errors give.
    pub url: String,
    /// Its size in bytes.
    pub size: u64,
    /// What identifies this version of it: its size, and its ETag or else its last
    /// modification time.
    pub version: String,
}

impl Object {
    /// The object's bytes, whole.
    ///
    /// # Errors
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) naming the URL: missing, larger than
    /// [`OBJECT_LIMIT`], or the store's fault.
    pub fn read(&self) -> Result<Bytes> {
        match self
            .remote
            .get_at(self.location.clone(), &self.url, OBJECT_LIMIT)?
        {
            Some((bytes, _)) => Ok(bytes),
            None => Err(not_found(&self.url, "no such object")),
        }
    }
}

/// The objects `url` names, sorted by path.
///
/// # Errors
/// [`ErrorKind::Io`](crate::ErrorKind::Io) naming `url` when it names no object, or an
/// object larger than [`OBJECT_LIMIT`]; the store's errors;
/// [`ArgumentError::InvalidArgument`](crate::ArgumentError::InvalidArgument) for a URL the
/// store cannot take.
pub(super) fn objects(url: &str, options: &RemoteOptions) -> Result<Vec<Object>> {
    let (root, path) = split(url)?;
    let remote = Arc::new(Remote::new(&root, options.storage_options())?);
    // A glob lists the directory before its first wildcard.
    let wildcard = path.find(['*', '?', '[']);
    let pattern = wildcard.map(|_| path.clone());
    let base = match wildcard {
        Some(at) => path[..path[..at].rfind('/').map_or(0, |i| i + 1)].to_owned(),
        None => path.clone(),
    };
    let mut metas = Vec::new();
    if pattern.is_none() && !path.is_empty() && !path.ends_with('/') {
        metas.extend(head(&remote, &path, url)?);
    }
    if metas.is_empty() {
        let dir = format!("{}/", base.trim_end_matches('/'));
        let dir = if dir == "/" { String::new() } else { dir };
        let listed = list(&remote, &dir, url)?;
        metas = (listed.into_iter())
            .filter(|m| m.location.as_ref().strip_prefix(&dir).is_some_and(visible))
            .filter(|m| {
                pattern
                    .as_ref()
                    .is_none_or(|p| matches(p, m.location.as_ref()))
            })
            .collect();
    }
    // A directory marker (a key ending in `/`) is listed as an empty object of its path
    // without the `/`, which a HEAD does not find.
    let mut kept = Vec::with_capacity(metas.len());
    for meta in metas {
        if meta.size > 0 || head(&remote, meta.location.as_ref(), url)?.is_some() {
            kept.push(meta);
        }
    }
    let mut metas = kept;
    if metas.is_empty() {
        return Err(not_found(url, "no object matches the URL"));
    }
    metas.sort_by(|a, b| a.location.cmp(&b.location));
    metas
        .into_iter()
        .map(|meta| object(&remote, &root, meta))
        .collect()
}

/// `url` as its store's root URL (`scheme://bucket/`) and the path in it.
fn split(url: &str) -> Result<(String, String)> {
    let scheme_end = url.find("://").map(|i| i + 3).unwrap_or(0);
    let (authority, path) = url[scheme_end..]
        .split_once('/')
        .unwrap_or((&url[scheme_end..], ""));
    if authority.is_empty() {
        return Err(Error::invalid_argument(
            "tokenize",
            "inputs",
            url,
            "a URL with a bucket (s3://bucket/prefix/)",
        ));
    }
    Ok((
        format!("{}{authority}/", &url[..scheme_end]),
        path.to_owned(),
    ))
}

/// The one object at `path`, if there.
fn head(remote: &Remote, path: &str, url: &str) -> Result<Option<ObjectMeta>> {
    let location = store_path(path, url)?;
    remote.with_store(|store| async move {
        match store.head(&location).await {
            Ok(meta) => Ok(Some(meta)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(store_error(e, url)),
        }
    })
}

/// Every object under the directory `dir` (empty, or ending in `/`), at any depth.
fn list(remote: &Remote, dir: &str, url: &str) -> Result<Vec<ObjectMeta>> {
    let prefix = store_path(dir.trim_end_matches('/'), url)?;
    remote.with_store(|store| async move {
        let prefix = (!prefix.as_ref().is_empty()).then_some(prefix);
        let listed = store.list(prefix.as_ref()).try_collect::<Vec<_>>().await;
        listed.map_err(|e| store_error(e, url))
    })
}

/// `path` as a path of the store.
fn store_path(path: &str, url: &str) -> Result<StorePath> {
    StorePath::parse(path).map_err(|e| {
        Error::invalid_argument("tokenize", "inputs", url, format!("a valid path ({e})"))
    })
}

/// Whether no name of the path `relative` is empty (a directory marker) or starts with `.`
/// or `_`.
fn visible(relative: &str) -> bool {
    relative
        .split('/')
        .all(|name| !name.is_empty() && !name.starts_with('.') && !name.starts_with('_'))
}

/// The listed `meta` as an input object, refused if too large.
fn object(remote: &Arc<Remote>, root: &str, meta: ObjectMeta) -> Result<Object> {
    let url = format!("{root}{}", meta.location);
    within_limit(&url, meta.size)?;
    let stamp = meta
        .e_tag
        .unwrap_or_else(|| meta.last_modified.to_rfc3339());
    Ok(Object {
        remote: remote.clone(),
        location: meta.location,
        url,
        size: meta.size,
        version: format!("{} {stamp}", meta.size),
    })
}

/// Refuses the object `url` of `size` bytes if larger than [`OBJECT_LIMIT`].
fn within_limit(url: &str, size: u64) -> Result<()> {
    if size <= OBJECT_LIMIT {
        return Ok(());
    }
    let what = format!(
        "is {size} bytes, larger than the limit of {OBJECT_LIMIT} bytes an input object is read whole up to"
    );
    Err(Error::from(std::io::Error::other(what)).in_file(url))
}

/// An [`ErrorKind::Io`](crate::ErrorKind::Io) "not found" naming `url`.
fn not_found(url: &str, what: &str) -> Error {
    Error::from(std::io::Error::new(std::io::ErrorKind::NotFound, what)).in_file(url)
}

/// Whether `path` matches the glob `pattern`: `*` and `?` any characters but `/`, `**` any
/// characters, `[…]` (or `[!…]`) one character of a class with ranges.
fn matches(pattern: &str, path: &str) -> bool {
    let (p, s): (Vec<char>, Vec<char>) = (pattern.chars().collect(), path.chars().collect());
    glob(&p, &s)
}

fn glob(p: &[char], s: &[char]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some('*') if p.get(1) == Some(&'*') => {
            // `**/` also matches no directory at all.
            let rest = &p[2..];
            let skip_slash = rest.first() == Some(&'/');
            (skip_slash && glob(&rest[1..], s)) || (0..=s.len()).any(|i| glob(rest, &s[i..]))
        }
        Some('*') => (0..=s.len())
            .take_while(|&i| i == 0 || s[i - 1] != '/')
            .any(|i| glob(&p[1..], &s[i..])),
        Some('?') => s.first().is_some_and(|&c| c != '/') && glob(&p[1..], &s[1..]),
        Some('[') => match (class(&p[1..], s.first().copied()), s.first()) {
            (Some((true, len)), Some(_)) => glob(&p[1 + len..], &s[1..]),
            (None, Some('[')) => glob(&p[1..], &s[1..]),
            _ => false,
        },
        Some(&c) => s.first() == Some(&c) && glob(&p[1..], &s[1..]),
    }
}

/// Whether `c` is in the class at the start of `p` (after its `[`), and the class's length
/// up to and with its `]`; `None` for an unclosed class (a literal `[`).
fn class(p: &[char], c: Option<char>) -> Option<(bool, usize)> {
    let negate = matches!(p.first(), Some('!' | '^'));
    let start = usize::from(negate);
    let end = start + 1 + p.get(start + 1..)?.iter().position(|&x| x == ']')?;
    let set = &p[start..end];
    let Some(c) = c.filter(|&c| c != '/') else {
        return Some((false, end + 1));
    };
    let mut found = false;
    let mut i = 0;
    while i < set.len() {
        if i + 2 < set.len() && set[i + 1] == '-' {
            found |= set[i] <= c && c <= set[i + 2];
            i += 3;
        } else {
            found |= set[i] == c;
            i += 1;
        }
    }
    Some((found != negate, end + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_within_and_across_names() {
        let yes = [
            ("c/*.jsonl", "c/a.jsonl"),
            ("c/**/*.txt", "c/a.txt"),
            ("c/**/*.txt", "c/x/y/a.txt"),
            ("c/part-?[0-9].txt", "c/part-a7.txt"),
            ("c/[!a]*", "c/b"),
        ];
        let no = [
            ("c/*.jsonl", "c/x/a.jsonl"),
            ("c/*.txt", "c/a.txt.gz"),
            ("c/part-?[0-9].txt", "c/part-ab.txt"),
            ("c/[!a]*", "c/a"),
        ];
        for (p, s) in yes {
            assert!(matches(p, s), "{p} {s}");
        }
        for (p, s) in no {
            assert!(!matches(p, s), "{p} {s}");
        }
    }

    #[test]
    fn an_object_over_the_limit_is_refused_by_its_url() {
        assert!(within_limit("s3://b/a.jsonl", OBJECT_LIMIT).is_ok());
        let err = within_limit("s3://b/a.jsonl", OBJECT_LIMIT + 1).unwrap_err();
        assert!(matches!(err.kind(), crate::error::ErrorKind::Io(_)));
        let text = err.to_string();
        assert!(
            text.contains("s3://b/a.jsonl") && text.contains("1073741825 bytes"),
            "{text}"
        );
    }

    #[test]
    fn a_url_splits_into_its_bucket_and_path() {
        let (root, path) = split("s3://bucket/corpus/*.txt").unwrap();
        assert_eq!(
            (root.as_str(), path.as_str()),
            ("s3://bucket/", "corpus/*.txt")
        );
        assert_eq!(split("s3://bucket").unwrap().1, "");
        assert!(split("s3:///x").is_err());
        assert!(visible("a/b.txt") && !visible("a/_SUCCESS") && !visible(".x/b"));
        assert!(!visible("") && !visible("a/"));
    }
}
