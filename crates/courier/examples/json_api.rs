//! A JSON API client: typed requests and responses with serde, errors for
//! 4xx/5xx, and a timeout.
//!
//! Run the built-in server, then the example:
//!
//! ```sh
//! cargo run -p courier-cli -- serve            # listens on 127.0.0.1:8080
//! cargo run -p courier-http --example json_api      # COURIER_URL=http://host:port to point elsewhere
//! ```

use std::time::Duration;

use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Order {
    id: u64,
    item: String,
    quantity: u32,
}

/// What `/json/{n}` answers: `{"data": "..."}`.
#[derive(Debug, Deserialize)]
struct Payload {
    data: String,
}

#[tokio::main]
async fn main() -> Result<(), courier::Error> {
    let base = std::env::var("COURIER_URL").unwrap_or_else(|_| "http://127.0.0.1:8080".into());
    let client = courier::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()?;

    // GET and deserialize.
    let payload: Payload = client
        .get(format!("{base}/json/64"))
        .header("accept", "application/json")
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    println!("GET /json/64: {} bytes of data", payload.data.len());

    // POST a JSON body (`/echo` sends it back) and read it back typed.
    let order = Order {
        id: 7,
        item: "coffee".into(),
        quantity: 2,
    };
    let echoed: Order = client
        .post(format!("{base}/echo"))
        .json(&order)
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    assert_eq!(echoed, order);
    println!("POST /echo: {echoed:?}");

    // A 4xx/5xx becomes an error of kind `status` that names the URL.
    let err = client
        .get(format!("{base}/status/404"))
        .send()
        .await?
        .error_for_status()
        .unwrap_err();
    println!("GET /status/404: {err:#} (kind {})", err.kind());
    Ok(())
}
