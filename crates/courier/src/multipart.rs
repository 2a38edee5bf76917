//! `multipart/form-data` bodies (RFC 7578), behind the `multipart` feature:
//! what an HTML form with a file input sends, and what upload APIs take.
//!
//! The body is built in memory, so it has a length and can be sent again
//! like any buffered body. Names and file names are quoted the way browsers
//! do it (the WHATWG form encoding: `"`, CR and LF percent-encoded), so a
//! caller's value can never end a part early or add a header to it.

use bytes::{BufMut, Bytes, BytesMut};
use http::HeaderValue;

/// A `multipart/form-data` body.
///
/// ```
/// use courier::multipart::{Form, Part};
///
/// let form = Form::new()
///     .text("title", "Quarterly report")
///     .part(
///         "file",
///         Part::bytes(b"%PDF-1.7 ...".to_vec())
///             .file_name("q3.pdf")
///             .mime_str("application/pdf"),
///     );
/// # async fn send(form: Form) -> Result<(), courier::Error> {
/// courier::Client::new()
///     .post("http://127.0.0.1:8080/upload")
///     .multipart(form)
///     .send()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Form {
    boundary: String,
    parts: Vec<(String, Part)>,
}

/// One field of a [`Form`].
#[derive(Debug, Clone)]
pub struct Part {
    body: Bytes,
    file_name: Option<String>,
    content_type: Option<String>,
}

impl Default for Form {
    fn default() -> Self {
        Form::new()
    }
}

impl Form {
    /// An empty form with a random boundary.
    pub fn new() -> Form {
        let boundary = format!(
            "courier-{:016x}{:016x}",
            fastrand::u64(..),
            fastrand::u64(..)
        );
        Form {
            boundary,
            parts: Vec::new(),
        }
    }

    /// Adds a text field.
    pub fn text(self, name: impl Into<String>, value: impl Into<String>) -> Form {
        self.part(name, Part::text(value))
    }

    /// Adds a field.
    pub fn part(mut self, name: impl Into<String>, part: Part) -> Form {
        self.parts.push((name.into(), part));
        self
    }

    /// The boundary between parts.
    pub fn boundary(&self) -> &str {
        &self.boundary
    }

    /// The `Content-Type` header value and the encoded body.
    pub(crate) fn encode(self) -> (HeaderValue, Bytes) {
        let size: usize = self
            .parts
            .iter()
            .map(|(n, p)| p.body.len() + n.len() + 128 + self.boundary.len())
            .sum();
        let mut out = BytesMut::with_capacity(size + self.boundary.len() + 8);
        for (name, part) in &self.parts {
            out.put_slice(b"--");
            out.put_slice(self.boundary.as_bytes());
            out.put_slice(b"\r\ncontent-disposition: form-data; name=\"");
            out.put_slice(quoted(name).as_bytes());
            out.put_slice(b"\"");
            if let Some(file_name) = &part.file_name {
                out.put_slice(b"; filename=\"");
                out.put_slice(quoted(file_name).as_bytes());
                out.put_slice(b"\"");
            }
            out.put_slice(b"\r\n");
            if let Some(content_type) = &part.content_type {
                out.put_slice(b"content-type: ");
                out.put_slice(content_type.as_bytes());
                out.put_slice(b"\r\n");
            }
            out.put_slice(b"\r\n");
            out.put_slice(&part.body);
            out.put_slice(b"\r\n");
        }
        out.put_slice(b"--");
        out.put_slice(self.boundary.as_bytes());
        out.put_slice(b"--\r\n");
        let content_type = format!("multipart/form-data; boundary={}", self.boundary);
        // The boundary is hex and ASCII letters: always a valid value.
        let value = HeaderValue::try_from(content_type)
            .unwrap_or_else(|_| HeaderValue::from_static("multipart/form-data"));
        (value, out.freeze())
    }
}

impl Part {
    /// A text value.
    pub fn text(value: impl Into<String>) -> Part {
        Part::bytes(value.into().into_bytes())
    }

    /// Bytes, for a file's contents.
    pub fn bytes(body: impl Into<Bytes>) -> Part {
        Part {
            body: body.into(),
            file_name: None,
            content_type: None,
        }
    }

    /// The file name the server sees (`filename=` in its disposition).
    pub fn file_name(mut self, name: impl Into<String>) -> Part {
        self.file_name = Some(name.into());
        self
    }

    /// The part's `Content-Type`. A value with a control character is
    /// dropped (it could not be sent without breaking the part's head).
    pub fn mime_str(mut self, content_type: &str) -> Part {
        self.content_type =
            (!content_type.chars().any(char::is_control)).then(|| content_type.to_owned());
        self
    }
}

/// A name or file name inside `"..."`, encoded as browsers encode them.
fn quoted(s: &str) -> String {
    s.replace('"', "%22")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_encodes_as_rfc_7578_says() {
        let mut form = Form::new().text("a", "1").part(
            "f",
            Part::bytes(&b"\x00\xff"[..])
                .file_name("x.bin")
                .mime_str("application/octet-stream"),
        );
        form.boundary = "B".into();
        let (content_type, body) = form.encode();
        assert_eq!(content_type, "multipart/form-data; boundary=B");
        assert_eq!(
            &body[..],
            &b"--B\r\ncontent-disposition: form-data; name=\"a\"\r\n\r\n1\r\n\
               --B\r\ncontent-disposition: form-data; name=\"f\"; filename=\"x.bin\"\r\n\
               content-type: application/octet-stream\r\n\r\n\x00\xff\r\n--B--\r\n"[..]
        );
    }

    #[test]
    fn names_cannot_break_out_of_their_quotes_or_their_part() {
        let mut form = Form::new().part(
            "n\"\r\nx-injected: 1",
            Part::text("v")
                .file_name("a\".txt")
                .mime_str("text/plain\r\nx: 1"),
        );
        form.boundary = "B".into();
        let (_, body) = form.encode();
        let text = String::from_utf8(body.to_vec()).unwrap();
        assert!(text.contains("name=\"n%22%0D%0Ax-injected: 1\""), "{text}");
        assert!(text.contains("filename=\"a%22.txt\""), "{text}");
        assert!(!text.contains("content-type"), "{text}");
        assert_eq!(text.matches("\r\n").count(), 5, "{text}");
    }

    #[test]
    fn boundaries_differ() {
        assert_ne!(Form::new().boundary(), Form::new().boundary());
    }
}
