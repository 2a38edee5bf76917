//! `multipart/form-data` uploads (`multipart` feature), read back by a
//! real multipart parser: the built-in server echoes the body, and the
//! test splits it by the boundary the content type names.

use courier::multipart::{Form, Part};
use courier::Client;

#[tokio::test]
async fn a_form_with_a_file_arrives_whole() {
    let srv = crate::support::server().await;
    let file: Vec<u8> = (0..=255u8).cycle().take(100_000).collect();
    let form = Form::new().text("title", "Q3 \"final\"").part(
        "file",
        Part::bytes(file.clone())
            .file_name("q3.bin")
            .mime_str("application/octet-stream"),
    );
    let boundary = form.boundary().to_owned();
    let res = Client::new()
        .post(srv.url("/echo"))
        .multipart(form)
        .send()
        .await
        .unwrap();
    let content_type = res.headers()["content-type"].to_str().unwrap().to_owned();
    assert_eq!(
        content_type,
        format!("multipart/form-data; boundary={boundary}")
    );
    let body = res.bytes().await.unwrap();
    let delimiter = format!("\r\n--{boundary}");
    // Prepend CRLF so every delimiter, the first included, has the same shape.
    let mut whole = b"\r\n".to_vec();
    whole.extend_from_slice(&body);
    let parts: Vec<&[u8]> = split(&whole, delimiter.as_bytes());
    // Before the first delimiter nothing; after the last, `--\r\n`.
    assert_eq!(parts.len(), 4, "{parts:?}");
    assert!(parts[0].is_empty());
    assert_eq!(parts[3], b"--\r\n");
    let title = String::from_utf8_lossy(parts[1]);
    assert!(title.contains("name=\"title\""), "{title}");
    assert!(title.ends_with("\r\n\r\nQ3 \"final\""), "{title}");
    let head_end = find(parts[2], b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&parts[2][..head_end]);
    assert!(head.contains("filename=\"q3.bin\""), "{head}");
    assert_eq!(&parts[2][head_end + 4..], &file[..]);
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn split<'a>(mut hay: &'a [u8], sep: &[u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    while let Some(i) = find(hay, sep) {
        out.push(&hay[..i]);
        hay = &hay[i + sep.len()..];
    }
    out.push(hay);
    out
}
