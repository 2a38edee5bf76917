//! A reqwest program ported to courier: a GET with a query and a JSON
//! answer, a form POST, `error_for_status`, a redirect followed and a gzip
//! body decoded by a plain `Client::new()`, every URL a `url::Url`. The diff
//! from the reqwest original is names only (docs/src/porting-from-reqwest.md).
//!
//! Run the built-in server, then the example:
//!
//! ```sh
//! cargo run -p courier-cli -- serve                      # listens on 127.0.0.1:8080
//! cargo run -p courier-http --example reqwest_port       # or: -- http://host:port
//! ```
//!
//! The base URL is the first argument, else `COURIER_URL`, else
//! `http://127.0.0.1:8080`.

use std::collections::HashMap;

use courier::{Client, StatusCode, Url};
use serde::Deserialize;

/// What `/get` answers (httpbin's shape).
#[derive(Debug, Deserialize)]
struct Get {
    args: HashMap<String, String>,
    url: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base = std::env::args()
        .nth(1)
        .or_else(|| std::env::var("COURIER_URL").ok())
        .unwrap_or_else(|| "http://127.0.0.1:8080".into());
    let base = Url::parse(&base)?;
    let client = Client::new();

    // GET with a query; the answer is JSON.
    let get: Get = client
        .get(base.join("/get")?)
        .query(&[("q", "a&b c"), ("lang", "en")])
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    assert_eq!(get.args["q"], "a&b c");
    println!("GET  {} -> args {:?}", get.url, get.args);

    // POST a form; `/echo` answers the body it got.
    let echoed = client
        .post(base.join("/echo")?)
        .form(&[("name", "courier"), ("lang", "rust")])
        .send()
        .await?
        .error_for_status()?
        .text()
        .await?;
    assert_eq!(echoed, "name=courier&lang=rust");
    println!("POST {} -> {echoed}", base.join("/echo")?);

    // A 5xx as an error.
    let err = client
        .get(base.join("/status/503")?)
        .send()
        .await?
        .error_for_status()
        .unwrap_err();
    assert!(err.is_status());
    assert_eq!(err.status(), Some(StatusCode::SERVICE_UNAVAILABLE));
    println!("GET  /status/503 -> error: {err}");

    // Redirects are followed (up to 10); `url()` is where the answer came from.
    let res = client.get(base.join("/redirect/2")?).send().await?;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.url().path(), "/redirect/0");
    println!("GET  /redirect/2 -> {} from {}", res.status(), res.url());

    // A gzip body is decoded.
    let gzip: serde_json::Value = client.get(base.join("/gzip")?).send().await?.json().await?;
    assert_eq!(gzip["gzipped"], true);
    println!("GET  /gzip -> {gzip}");
    Ok(())
}
