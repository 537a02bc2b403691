//! The HTTP client behind every store: `object_store`'s own (its client options applied: the
//! user agent, proxy, timeouts, certificates' checks, HTTP versions, `allow_http`), except
//! that a redirect is followed only within the origin it came from. `reqwest` follows
//! redirects to any origin by default and forwards headers such as
//! `x-amz-security-token` there; a store that answers with a redirect to another host
//! (a misconfigured or hostile endpoint) gets an error instead. S3, GCS and Azure send
//! none; an HTTP server may redirect within itself.
//!
//! TLS is rustls with `ring` as its crypto provider, installed as the process's default
//! when no other is (a program that installed its own keeps it).

use std::time::Duration;

use object_store::client::{HttpClient, HttpConnector};
use object_store::{ClientConfigKey as Key, ClientOptions};

/// The most redirects followed for one request (within its origin).
const MAX_REDIRECTS: usize = 10;

/// Makes the stores' HTTP client: see the module's documentation.
#[derive(Debug, Default)]
pub(super) struct SameOriginConnector;

impl HttpConnector for SameOriginConnector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let get = |key: Key| options.get_config_value(&key);
        let yes = |key: Key| get(key).is_some_and(|v| v == "true");
        let generic =
            |source: Box<dyn std::error::Error + Send + Sync>| object_store::Error::Generic {
                store: "HTTP client",
                source,
            };
        let policy = reqwest::redirect::Policy::custom(|attempt| {
            let same = attempt.previous().last().is_some_and(|from| {
                let to = attempt.url();
                (from.scheme(), from.host_str(), from.port_or_known_default())
                    == (to.scheme(), to.host_str(), to.port_or_known_default())
            });
            match (same, attempt.previous().len() > MAX_REDIRECTS) {
                (true, false) => attempt.follow(),
                (true, true) => attempt.error("too many redirects"),
                (false, _) => attempt.error(
                    "a redirect to another origin, which is not followed (no credentials leave \
                     the store's origin)",
                ),
            }
        });
        // Err: the process already has a default provider, which reqwest then uses.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = reqwest::ClientBuilder::new()
            .redirect(policy)
            .https_only(!yes(Key::AllowHttp))
            .danger_accept_invalid_certs(yes(Key::AllowInvalidCertificates));
        if let Some(agent) = get(Key::UserAgent) {
            builder = builder.user_agent(agent);
        }
        if let Some(url) = get(Key::ProxyUrl) {
            let mut proxy = reqwest::Proxy::all(url).map_err(|e| generic(Box::new(e)))?;
            if let Some(excludes) = get(Key::ProxyExcludes) {
                proxy = proxy.no_proxy(reqwest::NoProxy::from_string(&excludes));
            }
            builder = builder.proxy(proxy);
        }
        let timeout = |key: Key| get(key).and_then(|text| parse_duration(&text));
        if let Some(t) = timeout(Key::Timeout) {
            builder = builder.timeout(t);
        }
        if let Some(t) = timeout(Key::ConnectTimeout) {
            builder = builder.connect_timeout(t);
        }
        if let Some(t) = timeout(Key::ReadTimeout) {
            builder = builder.read_timeout(t);
        }
        if let Some(t) = timeout(Key::PoolIdleTimeout) {
            builder = builder.pool_idle_timeout(t);
        }
        if yes(Key::Http1Only) {
            builder = builder.http1_only();
        }
        if yes(Key::Http2Only) {
            builder = builder.http2_prior_knowledge();
        }
        let client = builder.build().map_err(|e| generic(Box::new(e)))?;
        Ok(HttpClient::new(client))
    }
}

/// A duration as `object_store` prints its options' (`30s`, `1m 30s`, `500ms`); `None`
/// for anything else.
fn parse_duration(text: &str) -> Option<Duration> {
    let mut total = Duration::ZERO;
    for part in text.split_whitespace() {
        let split = part.find(|c: char| !c.is_ascii_digit())?;
        let (number, unit) = (part[..split].parse::<u64>().ok()?, &part[split..]);
        total += match unit {
            "ns" => Duration::from_nanos(number),
            "us" | "µs" => Duration::from_micros(number),
            "ms" => Duration::from_millis(number),
            "s" => Duration::from_secs(number),
            "m" => Duration::from_secs(number.checked_mul(60)?),
            "h" => Duration::from_secs(number.checked_mul(3600)?),
            "d" | "days" => Duration::from_secs(number.checked_mul(86_400)?),
            _ => return None,
        };
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_object_store_prints_them() {
        assert_eq!(parse_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(
            parse_duration("1m 30s 500ms"),
            Some(Duration::from_millis(90_500))
        );
        assert_eq!(parse_duration("soon"), None);
    }
}
