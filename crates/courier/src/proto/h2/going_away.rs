//! The GOAWAY part of a connection: the last stream a server's GOAWAY said
//! it would answer, and the PING that asks whether it still will
//! ([`super::goaway`] handles the frame; the driver runs the PING's deadline).

/// What the server's GOAWAYs said, and whether courier probes them.
#[derive(Debug, Default)]
pub(crate) struct GoingAway {
    /// The lowest last stream id of the GOAWAYs received.
    last: Option<u32>,
    /// A PING was queued to ask whether a server that sent GOAWAY will still
    /// answer the streams it kept; the driver arms its deadline.
    probe: bool,
}

impl GoingAway {
    /// A GOAWAY named `last`: a later one may only lower it.
    pub(crate) fn received(&mut self, last: u32) {
        self.last = Some(self.last.map_or(last, |before| before.min(last)));
    }

    /// The server sent a GOAWAY.
    pub(crate) fn is_received(&self) -> bool {
        self.last.is_some()
    }

    /// A probing PING was queued and its deadline not yet armed.
    pub(crate) fn is_probing(&self) -> bool {
        self.probe
    }

    /// A probing PING was queued.
    pub(crate) fn probe_sent(&mut self) {
        self.probe = true;
    }

    /// Whether a probing PING was queued since last asked: the driver arms
    /// its deadline.
    pub(crate) fn take_probe(&mut self) -> bool {
        std::mem::take(&mut self.probe)
    }
}
