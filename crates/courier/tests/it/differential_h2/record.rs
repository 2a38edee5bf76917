//! The records both readings of an HTTP/2 differential case reduce to, and
//! their comparison: shared by `differential_h2.rs` (real sockets, the
//! corpus) and `fuzz/fuzz_targets/http2_differential.rs` (in memory,
//! arbitrary frames), so both hold courier to the same rules. See
//! `harness.rs` for how each client's failures map onto [`Class`].

use courier::ErrorKind;

/// How a request failed (see the module doc for the mapping).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Stream,
    Connection,
    Refused,
    TooLarge,
    Body,
    Timeout,
    Other,
}

/// A response read whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    /// The selected headers (`x-*`, `content-length`, `content-type`), sorted.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub trailers: Option<Vec<(String, String)>>,
}

/// What a fresh request after the first exchange got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Second {
    /// Exactly [`second`], on the first connection.
    Reused,
    /// Exactly [`second`], on a new connection.
    Redialed,
    /// No answer (h2 tries a new connection first unless its own only
    /// made the request wait).
    Failed(Class),
    /// An answer that is not [`second`]: the client lost track.
    Wrong(String),
}

/// One client's reading of a case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub first: Result<Answer, Class>,
    pub second: Second,
    /// courier's error kind for the first request, when it failed (h2's
    /// reading has none: its class says all the allowlist pins of it).
    pub kind: Option<ErrorKind>,
}

/// How the two readings compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Agree,
    /// courier failed the request h2 read (courier is stricter).
    CourierRefuses,
    /// h2 failed the request courier read (courier is laxer: a finding).
    H2Refuses,
    /// Both failed, classed differently (courier's, h2's).
    BothFail(Class, Class),
    /// courier retried a refused request on a new connection (and so read
    /// [`second`] for it); h2 reported the refusal.
    CourierRetries,
    /// The same first answer; courier opened a new connection for the
    /// next request, h2 kept its own.
    CourierCloses,
    /// The same first answer; h2 opened a new connection, courier kept its own.
    H2Closes,
    /// Different answers read, a wrong second answer, or a client that could
    /// not send a next request at all: a defect on one side.
    Differ(String),
}

/// The answer is the next request's, [`super::harness::second`].
pub fn is_second(answer: &Answer) -> bool {
    answer.status == 202 && answer.body == b"second"
}

/// courier's error kind as a [`Class`] (a `Protocol` error is a
/// connection error instead where the connection did not survive).
pub fn courier_class(kind: ErrorKind) -> Class {
    match kind {
        ErrorKind::Protocol => Class::Stream,
        ErrorKind::ConnectionClosed => Class::Connection,
        ErrorKind::Refused => Class::Refused,
        ErrorKind::HeadersTooLarge => Class::TooLarge,
        ErrorKind::Body => Class::Body,
        ErrorKind::Timeout => Class::Timeout,
        _ => Class::Other,
    }
}

/// h2's error as a [`Class`].
pub fn h2_class(e: &h2::Error) -> Class {
    if e.is_io() {
        Class::Connection
    } else if e.is_reset() {
        match e.reason() {
            Some(h2::Reason::REFUSED_STREAM) if e.is_remote() => Class::Refused,
            _ => Class::Stream,
        }
    } else if e.is_go_away() {
        // A GOAWAY from the server fails only the streams past its last
        // stream id: unprocessed, as courier's `Refused`.
        match e.is_remote() {
            true => Class::Refused,
            false => Class::Connection,
        }
    } else {
        Class::Other
    }
}

/// The headers both readings keep (`x-*`, `content-length`, `content-type`), sorted.
pub fn selected(headers: &http::HeaderMap) -> Vec<(String, String)> {
    let mut out: Vec<_> = headers
        .iter()
        .filter(|(name, _)| {
            let name = name.as_str();
            name.starts_with("x-") || name == "content-length" || name == "content-type"
        })
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            (name.as_str().to_ascii_lowercase(), value)
        })
        .collect();
    out.sort();
    out
}

/// Trailers are all kept (not only the selected headers).
pub fn selected_trailers(map: &http::HeaderMap) -> Vec<(String, String)> {
    let mut out: Vec<_> = map
        .iter()
        .map(|(n, v)| {
            let value = String::from_utf8_lossy(v.as_bytes()).into_owned();
            (n.as_str().to_owned(), value)
        })
        .collect();
    out.sort();
    out
}

/// Compares courier's reading with h2's (see [`Verdict`]).
pub fn compare(courier: &Record, h2: &Record) -> Verdict {
    for (who, record) in [("courier", courier), ("h2", h2)] {
        if let Second::Wrong(what) = &record.second {
            return Verdict::Differ(format!("{who} read a wrong second answer: {what}"));
        }
    }
    // Both may be unable to send a next request (the server allows no
    // stream), but alike: one alone is stuck where the other is not.
    if courier.second != h2.second {
        for (who, record) in [("courier", courier), ("h2", h2)] {
            if let Second::Failed(class) = &record.second {
                return Verdict::Differ(format!(
                    "{who} alone could not send a next request: {class:?}"
                ));
            }
        }
    }
    match (&courier.first, &h2.first) {
        (Ok(a), Err(_)) if is_second(a) => Verdict::CourierRetries,
        (Err(a), Err(b)) if a != b => Verdict::BothFail(*a, *b),
        (Err(_), Ok(_)) => Verdict::CourierRefuses,
        (Ok(_), Err(_)) => Verdict::H2Refuses,
        (a, b) if a != b => Verdict::Differ(format!("first: courier {a:?}, h2 {b:?}")),
        _ => match (&courier.second, &h2.second) {
            (a, b) if a == b => Verdict::Agree,
            (Second::Redialed, Second::Reused) => Verdict::CourierCloses,
            (Second::Reused, Second::Redialed) => Verdict::H2Closes,
            (a, b) => Verdict::Differ(format!("second: courier {a:?}, h2 {b:?}")),
        },
    }
}

/// h2's answer to a GET of `url` on `send`: the head, the body read to its
/// end (its window given back as it is read, so a long body is not stalled
/// by h2's flow control) and the trailers, each wait within `step`. The
/// test's reading and the fuzz target's are this one.
pub async fn h2_answer(
    send: &mut h2::client::SendRequest<bytes::Bytes>,
    url: &str,
    step: std::time::Duration,
) -> Result<Answer, Class> {
    let mut ready = match tokio::time::timeout(step, send.clone().ready()).await {
        Ok(Ok(ready)) => ready,
        Ok(Err(e)) => return Err(h2_class(&e)),
        Err(_) => return Err(Class::Timeout),
    };
    let req = http::Request::get(url).body(()).unwrap();
    let (response, _) = ready.send_request(req, true).map_err(|e| h2_class(&e))?;
    let res = match tokio::time::timeout(step, response).await {
        Ok(Ok(res)) => res,
        Ok(Err(e)) => return Err(h2_class(&e)),
        Err(_) => return Err(Class::Timeout),
    };
    let status = res.status().as_u16();
    let headers = selected(res.headers());
    let mut body = res.into_body();
    let reading = async {
        let mut bytes = Vec::new();
        while let Some(chunk) = body.data().await {
            let chunk = chunk.map_err(|_| Class::Body)?;
            let _ = body.flow_control().release_capacity(chunk.len());
            bytes.extend_from_slice(&chunk);
        }
        let trailers = body.trailers().await.map_err(|_| Class::Body)?;
        Ok((bytes, trailers))
    };
    let (body, trailers) = match tokio::time::timeout(step, reading).await {
        Ok(read) => read?,
        Err(_) => return Err(Class::Timeout),
    };
    Ok(Answer {
        status,
        headers,
        body,
        trailers: trailers.as_ref().map(selected_trailers),
    })
}
