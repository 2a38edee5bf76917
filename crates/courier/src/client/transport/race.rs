//! QUIC raced against TCP for an origin that offered HTTP/3 by `Alt-Svc`
//! (feature `http3`): QUIC starts first; TCP (and TLS) starts after the
//! head start, or at once if QUIC fails sooner; the first connection made
//! wins and the other attempt is dropped. QUIC that failed, or was still
//! unfinished when TCP won, marks the alternative broken (`alt.rs`), so the
//! origin stays on TCP for the backoff: a network that drops UDP costs one
//! head start, not one per connection.
//!
//! A TCP winner is kept (pooled as any connection): it is made, and QUIC
//! is broken for a while, so it is what the origin will use anyway. A QUIC
//! attempt slower than the head start plus TCP's handshake counts as
//! broken, not merely slow: on such a path it would not have helped, and
//! the next try comes after the backoff.

use tokio::time::Instant;

use super::dial::Origin;
use super::Transport;
use crate::error::Error;
use crate::pool::protocol::{Connected, Reporter};

impl Origin {
    /// Races QUIC to the alternative on `port` against TCP; see the
    /// module documentation.
    pub(super) async fn race(
        &self,
        port: u16,
        reporter: Reporter,
        deadline: Instant,
    ) -> Result<Connected<Transport>, Error> {
        let head_start = self.settings.config.http3.head_start;
        let quic = self.connect_http3(port, reporter.clone(), deadline);
        tokio::pin!(quic);
        let tcp_starts = tokio::time::sleep_until(Instant::now() + head_start);
        tokio::pin!(tcp_starts);
        // QUIC alone, for the head start.
        let early = tokio::select! {
            biased;
            made = &mut quic => Some(made),
            () = &mut tcp_starts => None,
        };
        match early {
            Some(Ok(connected)) => {
                self.alternative_works(port);
                return Ok(connected);
            }
            Some(Err(e)) => {
                tracing::debug!(origin = %self.authority, error = %e, "QUIC failed: TCP now");
                self.alternative_broken(port);
                return self.connect_tcp(reporter, deadline).await;
            }
            None => {}
        }
        // Both.
        let tcp = self.connect_tcp(reporter, deadline);
        tokio::pin!(tcp);
        tokio::select! {
            biased;
            made = &mut quic => match made {
                Ok(connected) => {
                    self.alternative_works(port);
                    Ok(connected)
                }
                Err(e) => {
                    tracing::debug!(origin = %self.authority, error = %e, "QUIC failed in the race");
                    self.alternative_broken(port);
                    tcp.await
                }
            },
            made = &mut tcp => match made {
                Ok(connected) => {
                    tracing::debug!(origin = %self.authority, "TCP won the race");
                    self.alternative_broken(port);
                    Ok(connected)
                }
                Err(tcp_error) => match quic.await {
                    Ok(connected) => {
                        self.alternative_works(port);
                        Ok(connected)
                    }
                    Err(_) => {
                        self.alternative_broken(port);
                        Err(tcp_error)
                    }
                },
            },
        }
    }
}
