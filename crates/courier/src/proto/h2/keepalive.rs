//! The timers that watch the peer: the deadline for its SETTINGS, the
//! driver's keep-alive PINGs, and the deadline of the PING sent after a
//! GOAWAY. (They are courier's only PINGs: windows grow without any, see
//! [`super::tune`].)

use std::future::Future;
use std::pin::Pin;
use std::task::Context;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// The payload of courier's keep-alive PINGs.
pub(crate) const PING_PAYLOAD: [u8; 8] = *b"courier!";

/// Keep-alive PINGs: every `interval`, if set (while streams are open, or
/// always with `while_idle`); a PONG later than `timeout` means the peer is
/// gone. The timeout also bounds the PING sent after a GOAWAY.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeepAliveConfig {
    pub(crate) interval: Option<Duration>,
    pub(crate) timeout: Duration,
    pub(crate) while_idle: bool,
}

impl KeepAliveConfig {
    /// No keep-alive PINGs; 20 s for a PONG.
    #[cfg(any(test, feature = "internal-hooks"))]
    pub(crate) const OFF: KeepAliveConfig = KeepAliveConfig {
        interval: None,
        timeout: Duration::from_secs(20),
        while_idle: false,
    };
}

struct KeepAlive {
    interval: Duration,
    timeout: Duration,
    while_idle: bool,
    timer: Pin<Box<Sleep>>,
    outstanding: bool,
}

/// The timers of the PINGs that watch the peer.
pub(crate) struct Watch {
    keep_alive: Option<KeepAlive>,
    /// How long a PING may go unanswered.
    pong_timeout: Duration,
    /// The deadline of the PING sent after a GOAWAY, while it is unanswered.
    goaway_probe: Option<Pin<Box<Sleep>>>,
    /// The deadline for the server's SETTINGS, until they arrive: requests
    /// are sent before them, and a server that never answers must not hold
    /// them beyond the connect timeout (which used to cover the wait).
    preface: Option<Pin<Box<Sleep>>>,
}

impl Watch {
    pub(crate) fn new(config: KeepAliveConfig, preface_by: Option<Instant>) -> Watch {
        Watch {
            keep_alive: config.interval.map(|interval| KeepAlive {
                interval,
                timeout: config.timeout,
                while_idle: config.while_idle,
                timer: Box::pin(tokio::time::sleep(interval)),
                outstanding: false,
            }),
            pong_timeout: config.timeout,
            goaway_probe: None,
            preface: preface_by.map(|at| Box::pin(tokio::time::sleep_until(at))),
        }
    }

    /// Runs the deadline for the server's SETTINGS (`arrived`: they did, and
    /// the timer is freed); true when it passed without them.
    pub(crate) fn preface_expired(&mut self, cx: &mut Context<'_>, arrived: bool) -> bool {
        if arrived {
            self.preface = None;
        }
        self.preface
            .as_mut()
            .is_some_and(|t| t.as_mut().poll(cx).is_ready())
    }

    /// Runs the keep-alive timer; true when a PING went unanswered. `pong`:
    /// a PING ACK arrived since the last call. When one is due, `ping`
    /// queues it ([`PING_PAYLOAD`]) if streams are open or `while_idle` (its
    /// argument), and says whether it did: the timers hold no connection
    /// state, the driver hands them what they need.
    pub(crate) fn keep_alive_expired(
        &mut self,
        cx: &mut Context<'_>,
        pong: bool,
        mut ping: impl FnMut(bool) -> bool,
    ) -> bool {
        let Some(ka) = self.keep_alive.as_mut() else {
            return false;
        };
        if pong && ka.outstanding {
            ka.outstanding = false;
            ka.timer.as_mut().reset(Instant::now() + ka.interval);
        }
        while ka.timer.as_mut().poll(cx).is_ready() {
            if ka.outstanding {
                return true;
            }
            if ping(ka.while_idle) {
                ka.outstanding = true;
                ka.timer.as_mut().reset(Instant::now() + ka.timeout);
            } else {
                ka.timer.as_mut().reset(Instant::now() + ka.interval);
            }
        }
        false
    }

    /// Arms and runs the deadline of the PING sent after a GOAWAY (see
    /// `goaway::probe_after_goaway`); true when it went unanswered: a server
    /// that neither answers nor closes would hold the streams it kept until
    /// their own deadlines. `probe_sent` says whether such a PING was queued
    /// since last asked (asked only while no deadline runs).
    pub(crate) fn goaway_probe_expired(
        &mut self,
        cx: &mut Context<'_>,
        pong: bool,
        probe_sent: impl FnOnce() -> bool,
    ) -> bool {
        if pong {
            self.goaway_probe = None;
        }
        if self.goaway_probe.is_none() && probe_sent() {
            let deadline = Instant::now() + self.pong_timeout;
            self.goaway_probe = Some(Box::pin(tokio::time::sleep_until(deadline)));
        }
        self.goaway_probe
            .as_mut()
            .is_some_and(|t| t.as_mut().poll(cx).is_ready())
    }
}
