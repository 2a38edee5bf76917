//! What runs: a [`Load`] (who sends how much, how), the flags resolved (`super::resolve`).
//!
//! Why apart from the flags: the flags are what was asked for (the report's `config`), this
//! is what runs (the report's `load`); the rules between them are in `resolve`, so this file
//! knows nothing of the flags and the whole bench can name a load without them.

use std::time::Duration;

/// How long the test runs when neither `--duration` nor `--requests` is given.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// Requests in flight per client in the closed loop when `-c` is not given.
pub const DEFAULT_CONCURRENCY: u64 = 64;
/// In-flight cap per client of the open loop when neither `-c` nor a connection cap is given.
pub const DEFAULT_OPEN_LOOP_CAP: u64 = 1000;
/// How long a long poll waits on the server when `--delay` is not given.
pub const DEFAULT_DELAY: Duration = Duration::from_secs(5);

/// When a run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// After exactly this many measured requests (successful or not).
    Requests(u64),
    /// When this much measured time has passed; requests still in flight are abandoned.
    Duration(Duration),
    /// Long polls without `-d`/`-n`: every request slot sends exactly one request.
    OneRound,
}

/// The load model, resolved from the flags.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Model {
    /// Each request slot sends, waits for the response, and sends again.
    Closed,
    /// Requests start on a fixed schedule of `rate` per second.
    Open { rate: f64 },
    /// Request slots hold long polls of `delay`.
    LongPoll { delay: Duration },
}

/// Who sends how much: the flags with every default filled in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    pub model: Model,
    /// Independent `Client`s.
    pub clients: u64,
    /// Request slots per client (closed loop, long polls) or in-flight cap per client (open loop).
    pub concurrency: u64,
    /// Connection cap per origin and client (`--connections` sets 1).
    pub max_connections_per_host: Option<u64>,
    pub stop: Stop,
    pub warmup: Duration,
}

impl Load {
    /// Requests that can be in flight at once over all clients.
    pub fn in_flight(&self) -> u64 {
        self.clients.saturating_mul(self.concurrency)
    }

    /// Short name of the model, as the report shows it.
    pub fn model_name(&self) -> &'static str {
        match self.model {
            Model::Closed => "closed",
            Model::Open { .. } => "open",
            Model::LongPoll { .. } => "longpoll",
        }
    }
}
