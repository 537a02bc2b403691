//! Dataset locations that are URLs (`s3://bucket/prefix/`, …) rather than local paths: told
//! apart here whether or not the `remote` feature that reads them is compiled in.

/// The scheme of `url`, lower case, if it has one (`scheme://…`).
pub(crate) fn url_scheme(url: &str) -> Option<String> {
    let (scheme, _) = url.split_once("://")?;
    let valid = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    valid.then(|| scheme.to_ascii_lowercase())
}

/// Whether `location` is a URL (`scheme://…`) rather than a local path.
///
/// # Example
/// ```
/// use lodtensor::shards::is_url;
/// assert!(is_url("s3://bucket/data/"));
/// assert!(!is_url("data/shards"));
/// ```
pub fn is_url(location: &str) -> bool {
    url_scheme(location).is_some()
}
