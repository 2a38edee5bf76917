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
//!
//! One race per origin at a time: the pool dials one connection per
//! waiting HTTP/1.1 request, so a wave of requests as an offer arrives
//! would otherwise make a wave of QUIC attempts (8 waiting requests made 7).
//! A dial while a race runs goes TCP at once. Chromium and .NET instead
//! park such requests on the one QUIC attempt (Chromium's main jobs start
//! TCP after the head start): they can hand one QUIC connection to many
//! requests waiting on it. Here each dial must bring a connection of its
//! own to the pool, and a QUIC winner serves the waiters anyway (it is
//! shared, 100 streams): a TCP connection made meanwhile costs a handshake
//! and gives way after its next request, and no request waits longer than
//! it would without HTTP/3.

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::time::Instant;

use super::dial::Origin;
use super::Transport;
use crate::error::Error;
use crate::pool::protocol::{Connected, Reporter};

/// The origin's race under way, ended when dropped (the race finished,
/// or the pool dropped the dial at its deadline).
pub(super) struct Racing<'a>(&'a AtomicBool);

impl Drop for Racing<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl Origin {
    /// Claims the origin's one race, unless another dial holds it.
    pub(super) fn start_race(&self) -> Option<Racing<'_>> {
        self.racing
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| Racing(&self.racing))
    }

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
