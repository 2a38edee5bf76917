//! Streaming: a download read chunk by chunk (never held whole in memory)
//! and an upload from a `Stream` of chunks of unknown total size.
//!
//! Run the built-in server, then the example:
//!
//! ```sh
//! cargo run -p courier-cli -- serve            # listens on 127.0.0.1:8080
//! cargo run -p courier-http --example streaming     # COURIER_URL=http://host:port to point elsewhere
//! ```

use std::time::Instant;

use futures_util::stream;

#[tokio::main]
async fn main() -> Result<(), courier::Error> {
    let base = std::env::var("COURIER_URL").unwrap_or_else(|_| "http://127.0.0.1:8080".into());
    let client = courier::Client::new();

    // Download 8 MiB sent chunked; each `chunk()` is what arrived, so memory
    // stays at one chunk whatever the size.
    let started = Instant::now();
    let mut res = client
        .get(format!("{base}/bytes/8388608?chunked=1"))
        .send()
        .await?
        .error_for_status()?;
    let (mut total, mut chunks) = (0usize, 0usize);
    while let Some(chunk) = res.chunk().await? {
        total += chunk.len();
        chunks += 1;
    }
    println!(
        "download: {total} bytes in {chunks} chunks, {:?}",
        started.elapsed()
    );

    // Upload a stream (here 64 chunks of 16 KiB generated on the fly; a file
    // or a channel works the same). Its length is unknown, so HTTP/1.1 sends
    // it chunked. `/echo` streams it back; count what returns.
    let chunk = vec![b'x'; 16 * 1024];
    let body = stream::iter((0..64).map(move |_| Ok::<_, std::io::Error>(chunk.clone())));
    let mut res = client
        .post(format!("{base}/echo"))
        .header("content-type", "application/octet-stream")
        .body(courier::Body::wrap_stream(body))
        .send()
        .await?
        .error_for_status()?;
    let mut echoed = 0usize;
    while let Some(chunk) = res.chunk().await? {
        echoed += chunk.len();
    }
    println!("upload: sent {} bytes, {echoed} came back", 64 * 16 * 1024);
    Ok(())
}
