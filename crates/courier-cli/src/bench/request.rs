//! The request every slot sends, and sending one.
//!
//! The request is prepared once ([`Template`]) and each send clones its parts: method, URI and
//! body are reference-counted, so the only per-request allocation on our side is the header map
//! copy when `-H` headers are set (which the library would need to own anyway). Requests go
//! through `Client::execute`, so the library's request path is measured, not a builder's.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use courier::Body;

use super::client::BenchClient;
use http::{HeaderMap, Method, Request, Uri};
use tokio::time::Instant;

use super::args::BenchArgs;
use super::cause::Failure;
use super::headers;
use super::stats::Measured;
use super::targets_file::Targets;
use crate::alloc;
use crate::error::{CliError, Result};

/// What to send.
#[derive(Debug, Clone)]
pub struct Template {
    method: Method,
    /// One per server address; slot `i` uses `uris[i % len]`.
    uris: Vec<Uri>,
    headers: HeaderMap,
    body: Bytes,
    /// Body bytes to read before dropping a response (`u64::MAX`: all of them).
    read_bytes: u64,
    /// `--targets`: the requests to cycle through instead of the one above.
    targets: Option<Arc<Targets>>,
}

/// How one request ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A response arrived and its body was read as far as asked.
    Response(Measured),
    /// The request failed.
    Failed(Failure),
}

impl Template {
    /// Builds the template from the flags, for the given URLs.
    pub fn new(args: &BenchArgs, uris: Vec<Uri>) -> Result<Self> {
        if uris.is_empty() {
            return Err(CliError::new("no URL to send requests to"));
        }
        let headers = if args.default_headers {
            HeaderMap::new() // on the client instead (`client::apply`)
        } else {
            headers::from_flags(args)?
        };
        let body = match (&args.body_file, args.body_size) {
            (Some(path), _) => Bytes::from(
                std::fs::read(path)
                    .map_err(|e| CliError::new(format!("--body-file {}: {e}", path.display())))?,
            ),
            (None, Some(n)) => Bytes::from(vec![
                b'x';
                usize::try_from(n).map_err(|_| CliError::new(
                    format!("--body-size {n} is too large")
                ))?
            ]),
            (None, None) => Bytes::new(),
        };
        Ok(Self {
            method: args.http_method()?,
            uris,
            headers,
            body,
            read_bytes: args.read_bytes.unwrap_or(u64::MAX),
            targets: None,
        })
    }

    /// A template that cycles through the entries of a targets file; `-H` headers go on every
    /// entry (an entry's own header of the same name replaces them).
    pub fn with_targets(args: &BenchArgs, mut targets: Targets) -> Result<Self> {
        let common = if args.default_headers {
            HeaderMap::new()
        } else {
            headers::from_flags(args)?
        };
        for entry in &mut targets.entries {
            let own = std::mem::take(&mut entry.headers);
            entry.headers = common.clone();
            for name in own.keys() {
                entry.headers.remove(name);
            }
            for (name, value) in &own {
                entry.headers.append(name, value.clone());
            }
        }
        let mut template = Self::new(args, targets.uris())?;
        template.headers = HeaderMap::new();
        template.targets = Some(Arc::new(targets));
        Ok(template)
    }

    /// The targets file, if requests come from one.
    pub fn targets(&self) -> Option<&Targets> {
        self.targets.as_deref()
    }

    /// What slot `slot` sends next: with a targets file the next entry of its cycle, else the
    /// slot itself (which picks the server address).
    pub fn pick(&self, slot: usize) -> usize {
        match &self.targets {
            Some(targets) => targets.pick(),
            None => slot,
        }
    }

    /// The request for slot `slot`.
    pub fn request(&self, slot: usize) -> Request<Body> {
        self.request_for(self.pick(slot))
    }

    /// The request `pick` chose.
    pub fn request_for(&self, pick: usize) -> Request<Body> {
        if let Some(targets) = &self.targets {
            let entry = &targets.entries[pick];
            let mut request = Request::new(Body::from(entry.body.clone()));
            *request.method_mut() = entry.method.clone();
            *request.uri_mut() = entry.uri.clone();
            if !entry.headers.is_empty() {
                *request.headers_mut() = entry.headers.clone();
            }
            return request;
        }
        let slot = pick;
        let mut request = Request::new(Body::from(self.body.clone()));
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = self.uri(slot).clone();
        if !self.headers.is_empty() {
            *request.headers_mut() = self.headers.clone();
        }
        request
    }

    /// The same request with every `/delay/{ms}` path ending changed to `/delay/0`: what long
    /// polls send first to open their connections without waiting.
    pub fn without_delay(&self) -> Result<Self> {
        let uris =
            self.uris
                .iter()
                .map(|uri| {
                    let path = uri.path();
                    let Some(at) = path.rfind("/delay/") else {
                        return Ok(uri.clone());
                    };
                    let mut parts = uri.clone().into_parts();
                    let zero = format!("{}/delay/0", &path[..at]);
                    parts.path_and_query = Some(zero.parse().map_err(|e| {
                        CliError::new(format!("cannot build the path `{zero}`: {e}"))
                    })?);
                    Uri::from_parts(parts)
                        .map_err(|e| CliError::new(format!("cannot build a URL for `{zero}`: {e}")))
                })
                .collect::<Result<_>>()?;
        Ok(Self {
            uris,
            ..self.clone()
        })
    }

    /// The URL of the request `pick` chose.
    pub fn uri(&self, pick: usize) -> &Uri {
        match &self.targets {
            Some(targets) => &targets.entries[pick].uri,
            None => &self.uris[pick % self.uris.len()],
        }
    }

    /// The URLs requests go to.
    pub fn uris(&self) -> &[Uri] {
        &self.uris
    }

    /// Number of headers each request carries (the browser set counts 11).
    #[cfg(test)]
    pub fn header_count(&self) -> usize {
        self.headers.len()
    }
}

/// Sends the request of slot `slot`, reads its body as far as the template says, and times both
/// phases from `start`, the moment of sending (read by the caller, who read the clock to decide
/// whether to send). Returns the outcome and the instant it ended: the clock read that timed
/// the last byte, which a closed loop takes as its next request's start. Not an `async fn`, which would keep its arguments twice (see
/// `closed::worker`). What the `async` block captures it keeps for its whole life, apart from
/// its locals (which share room): it captures the request's pick, not the slot and the pick
/// both, and makes the request and the library's future inside, where they share room with
/// the response.
pub fn send<'a>(
    client: &'a BenchClient,
    template: &'a Template,
    slot: usize,
    start: Instant,
) -> impl Future<Output = (Outcome, Instant)> + 'a {
    let pick = template.pick(slot);
    async move {
        // Building the request is the caller's work, not the client's: allocation counts leave it
        // out (and report it apart).
        let request = alloc::uncounted(|| template.request_for(pick));
        // Moved out of the result (a copy of about 500 B): a result kept across the reads would
        // be in the future's state beside the library's request future, not in its room, and
        // every long poll would hold its 500 B while it waits.
        let mut response = match client.execute(request).await {
            Ok(response) => response,
            Err(e) => return failed(&e, template, pick),
        };
        // Kept as nanoseconds (8 B, a `Duration` is 16) while the body is read: the slot's
        // room is the larger of the library's future and this phase (the response and these).
        let to_headers = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let status = response.status().as_u16();
        let mut body_bytes = 0u64;
        while body_bytes < template.read_bytes {
            match response.chunk().await {
                Ok(Some(chunk)) => body_bytes += chunk.len() as u64,
                Ok(None) => break,
                Err(e) => return failed(&e, template, pick),
            }
        }
        // Dropping an unfinished response hands the rest of the body to the library's drain.
        drop(response);
        let ended = Instant::now();
        let measured = Measured {
            status,
            to_headers: Duration::from_nanos(to_headers),
            to_last_byte: ended.saturating_duration_since(start),
            body_bytes,
            send_lag: None,
        };
        (Outcome::Response(measured), ended)
    }
}

/// A failed request's outcome, and when it ended.
fn failed(error: &courier::Error, template: &Template, pick: usize) -> (Outcome, Instant) {
    let failure = Failure::new(error, template.uri(pick));
    (Outcome::Failed(failure), Instant::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_polls_open_connections_with_a_zero_delay() {
        let args = crate::bench::args::tests::parse(&[]).unwrap();
        let uris = vec![
            "http://127.0.0.1:8080/delay/1000".parse().unwrap(),
            "http://127.0.0.2:8080/api/delay/5".parse().unwrap(),
            "http://127.0.0.3:8080/bytes/1".parse().unwrap(),
        ];
        let t = Template::new(&args, uris).unwrap().without_delay().unwrap();
        let urls: Vec<String> = t.uris().iter().map(ToString::to_string).collect();
        assert_eq!(
            urls,
            [
                "http://127.0.0.1:8080/delay/0",
                "http://127.0.0.2:8080/api/delay/0",
                "http://127.0.0.3:8080/bytes/1"
            ]
        );
    }

    #[test]
    fn the_browser_header_set_is_the_default_for_allocation_counts() {
        let uri = || vec!["http://127.0.0.1:1/".parse().unwrap()];
        let args = crate::bench::args::tests::parse(&["--count-allocations"]).unwrap();
        assert_eq!(Template::new(&args, uri()).unwrap().header_count(), 11);
        let args =
            crate::bench::args::tests::parse(&["--count-allocations", "-H", "a: b"]).unwrap();
        assert_eq!(Template::new(&args, uri()).unwrap().header_count(), 1);
        let args = crate::bench::args::tests::parse(&["--body-size", "3", "-m", "post"]).unwrap();
        let request = Template::new(&args, uri()).unwrap().request(0);
        assert_eq!(request.method(), Method::POST);
        assert_eq!(request.body().len(), Some(3));
    }

    #[test]
    fn with_default_headers_the_requests_carry_none() {
        let uri = || vec!["http://127.0.0.1:1/".parse().unwrap()];
        let args = crate::bench::args::tests::parse(&["--count-allocations", "--default-headers"])
            .unwrap();
        assert_eq!(Template::new(&args, uri()).unwrap().header_count(), 0);
        assert_eq!(headers::from_flags(&args).unwrap().len(), 11);
    }
}
