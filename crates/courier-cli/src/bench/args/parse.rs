//! The value parsers of the `courier bench` flags: each flag is checked as clap reads it, so a
//! typo in a header or a URL is reported with the flag's name instead of surfacing as a failed
//! request later.
//!
//! Why apart from the flags: the struct says what can be asked for; these say what a valid
//! value is. Values are kept as written where the report should record what was asked for.

use http::{HeaderName, HeaderValue, Method, Uri};

use super::super::pacer;
use crate::secs::Secs;

/// Accepts absolute http(s) URLs only: a relative or scheme-less URL cannot be sent anywhere.
pub(super) fn parse_url(text: &str) -> Result<String, String> {
    let uri: Uri = text
        .parse()
        .map_err(|e| format!("`{text}` is not a valid URL: {e}"))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        Some(other) => return Err(format!("unsupported scheme `{other}`: use http or https")),
        None => return Err(format!("`{text}` has no scheme: write http://{text}")),
    }
    if uri.authority().is_none() {
        return Err(format!("`{text}` has no host"));
    }
    Ok(text.to_owned())
}

/// A path (with optional query) for the built-in server.
pub(super) fn parse_path(text: &str) -> Result<String, String> {
    if !text.starts_with('/') {
        return Err(format!("`{text}` must start with `/`, e.g. /delay/50"));
    }
    http::uri::PathAndQuery::try_from(text).map_err(|e| format!("`{text}` is not a path: {e}"))?;
    Ok(text.to_owned())
}

/// A run length: a duration of more than zero (an empty run would report nothing, rc 0).
pub(super) fn parse_duration(text: &str) -> Result<Secs, String> {
    let refused =
        || format!("`{text}`: the run must last more than 0 seconds, e.g. 10, 0.5 or 500ms");
    let secs: Secs = text.parse().map_err(|_| refused())?;
    if secs.as_duration().is_zero() {
        return Err(refused());
    }
    Ok(secs)
}

/// An RFC 3339 time, kept as written (the report records what was asked for).
pub(super) fn parse_start_at(text: &str) -> Result<String, String> {
    super::super::start_at::parse(text)?;
    Ok(text.trim().to_owned())
}

/// `--stages`, checked and kept as written (the report records what was asked for).
pub(super) fn parse_stages(text: &str) -> Result<String, String> {
    pacer::parse_stages(text)?;
    Ok(text.trim().to_owned())
}

/// A positive, finite rate.
pub(super) fn parse_rate(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(rate) if rate.is_finite() && rate > 0.0 => Ok(rate),
        _ => Err(format!(
            "`{text}` is not a rate: expected requests per second, e.g. 500"
        )),
    }
}

/// `--tick`: a duration with its unit (`10ms`), more than 0 and at most a minute. A bare number
/// is refused: every time flag reads one as seconds, and `--tick 10` meant as h2load's 10 ms
/// would be a schedule of one burst every 10 s.
pub(super) fn parse_tick(text: &str) -> Result<Secs, String> {
    if text.trim().parse::<f64>().is_ok() {
        return Err(format!("`{text}` needs a unit, e.g. 10ms"));
    }
    let secs: Secs = text.parse()?;
    let tick = secs.as_duration();
    if tick.is_zero() || tick > std::time::Duration::from_secs(60) {
        return Err(format!(
            "`{text}` is not a tick: more than 0 and at most a minute, e.g. 10ms"
        ));
    }
    Ok(secs)
}

/// Upper-cases the method: methods are case-sensitive, and `post` almost always means POST.
pub(super) fn parse_method(text: &str) -> Result<String, String> {
    let upper = text.trim().to_ascii_uppercase();
    Method::from_bytes(upper.as_bytes()).map_err(|_| format!("`{text}` is not an HTTP method"))?;
    Ok(upper)
}

/// Checks a "name: value" header and returns it normalized.
pub(super) fn parse_header(text: &str) -> Result<String, String> {
    let (name, value) = split_header(text)?;
    let value = value
        .to_str()
        .map_err(|_| format!("header `{text}`: value must be visible ASCII"))?;
    Ok(format!("{name}: {value}"))
}

/// Splits and validates "name: value".
pub fn split_header(text: &str) -> Result<(HeaderName, HeaderValue), String> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| format!("header `{text}` must look like \"name: value\""))?;
    let name = HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| format!("header `{text}`: `{}` is not a valid name", name.trim()))?;
    let value = HeaderValue::from_str(value.trim())
        .map_err(|_| format!("header `{text}`: the value has invalid characters"))?;
    Ok((name, value))
}
