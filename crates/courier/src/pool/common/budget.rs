//! How many streams an HTTP/2 server serves on one connection, learnt from
//! its GOAWAYs, so that courier retires each connection one stream short of
//! the server's request limit instead of running into it.
//!
//! Running into it is not free everywhere: nginx answers what it named and
//! refuses the rest (resent, no harm), but hypercorn (python-h2) can send
//! nothing after its own GOAWAY, so every response in flight on that
//! connection is lost, the ones already half received included. Learning
//! from the first GOAWAY, not the second, halves what a new client loses.
//!
//! A GOAWAY's count is evidence of a limit only in some shapes (see
//! [`Served`]); a server restarting under load gives the limit shape with
//! any count. So a budget learnt from one GOAWAY is provisional: it is
//! confirmed when another connection shows the same count, and forgotten
//! after [`PROVISIONAL_FOR`] otherwise, so that a restart's count does not
//! cap connections for long. (Telling a restart apart by its different
//! counts on connections going away together does not work: several
//! connections dialed at once reach a request limit together, and
//! python-h2's counts then differ by a stream or two.) A budget is only ever lowered by what later
//! GOAWAYs show: a higher count comes from a connection that was given more
//! streams before the budget was known, and python-h2's count can overshoot
//! (it names the highest stream it has read, which may be past the one that
//! made it go away).

use std::time::Duration;

use tokio::time::Instant;

pub(crate) use crate::served::Served;

/// How long a budget learnt from a single GOAWAY stands unconfirmed.
pub(crate) const PROVISIONAL_FOR: Duration = Duration::from_secs(120);

/// The learnt budget of one origin.
#[derive(Debug, Default)]
pub(crate) struct StreamBudget {
    learnt: Option<Learnt>,
    /// A count seen once in a GOAWAY of the ambiguous shape, waiting for
    /// another connection to agree.
    seen_once: Option<usize>,
}

#[derive(Debug, Clone, Copy)]
struct Learnt {
    streams: usize,
    confirmed: bool,
    at: Instant,
}

impl StreamBudget {
    /// Streams each connection is given in all, if a budget is known.
    pub(crate) fn get(&self) -> Option<usize> {
        self.learnt.map(|l| l.streams)
    }

    /// Forgets a provisional budget older than [`PROVISIONAL_FOR`].
    pub(crate) fn expire(&mut self, now: Instant) {
        if self
            .learnt
            .is_some_and(|l| !l.confirmed && now.duration_since(l.at) >= PROVISIONAL_FOR)
        {
            self.learnt = None;
        }
    }

    /// Takes what a GOAWAY showed; the new budget if it changed. The budget
    /// is one stream fewer than the count, so the server never has to go
    /// away with streams in flight.
    pub(crate) fn learn(&mut self, served: Served, now: Instant) -> Option<usize> {
        let streams = served.count.saturating_sub(1).max(1);
        if let Some(l) = self.learnt.as_mut() {
            if l.streams == streams {
                l.confirmed = true;
                return None;
            }
            if l.streams < streams {
                return None;
            }
        }
        // A confirmed budget is lowered, and an ambiguous count taught, only
        // once two connections agree.
        let alone = served.certain && !self.learnt.is_some_and(|l| l.confirmed);
        if !alone && self.seen_once.replace(streams) != Some(streams) {
            return None;
        }
        self.learnt = Some(Learnt {
            streams,
            confirmed: !alone,
            at: now,
        });
        Some(streams)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn certain(count: usize) -> Served {
        Served {
            count,
            certain: true,
        }
    }

    fn ambiguous(count: usize) -> Served {
        Served {
            count,
            certain: false,
        }
    }

    #[test]
    fn a_limit_shaped_goaway_teaches_at_once() {
        let now = Instant::now();
        let mut b = StreamBudget::default();
        assert_eq!(b.learn(certain(101), now), Some(100));
        assert_eq!(b.get(), Some(100));
    }

    #[test]
    fn an_ambiguous_count_teaches_once_two_agree() {
        let now = Instant::now();
        let mut b = StreamBudget::default();
        assert_eq!(b.learn(ambiguous(4), now), None);
        assert_eq!(b.learn(ambiguous(7), now), None);
        assert_eq!(b.get(), None);
        assert_eq!(b.learn(ambiguous(7), now), Some(6));
        // Confirmed: it does not expire.
        b.expire(now + PROVISIONAL_FOR * 2);
        assert_eq!(b.get(), Some(6));
    }

    #[test]
    fn a_budget_is_lowered_never_raised() {
        let now = Instant::now();
        let mut b = StreamBudget::default();
        b.learn(certain(101), now);
        assert_eq!(b.learn(certain(103), now), None, "an overshooting count");
        assert_eq!(b.get(), Some(100));
        assert_eq!(b.learn(certain(51), now), Some(50));
        assert_eq!(b.learn(ambiguous(80), now), None);
        assert_eq!(b.get(), Some(50));
    }

    #[test]
    fn connections_reaching_a_limit_together_settle_on_the_lowest_count() {
        let now = Instant::now();
        let mut b = StreamBudget::default();
        b.learn(certain(102), now);
        b.learn(certain(101), now);
        b.learn(certain(103), now);
        assert_eq!(b.get(), Some(100));
        // The next that agrees confirms it.
        b.learn(certain(101), now);
        b.expire(now + PROVISIONAL_FOR);
        assert_eq!(b.get(), Some(100));
    }

    #[test]
    fn a_confirmed_budget_is_lowered_once_two_agree() {
        let now = Instant::now();
        let mut b = StreamBudget::default();
        b.learn(certain(101), now);
        b.learn(certain(101), now);
        assert_eq!(b.learn(certain(12), now), None, "a restart's count, once");
        assert_eq!(b.get(), Some(100));
        assert_eq!(b.learn(certain(12), now), Some(11));
    }

    #[test]
    fn a_provisional_budget_expires_unless_confirmed() {
        let now = Instant::now();
        let mut b = StreamBudget::default();
        b.learn(certain(37), now);
        b.expire(now + PROVISIONAL_FOR - Duration::from_secs(1));
        assert_eq!(b.get(), Some(36));
        b.expire(now + PROVISIONAL_FOR);
        assert_eq!(
            b.get(),
            None,
            "a restart's count does not cap connections for good"
        );

        b.learn(certain(101), now);
        assert_eq!(b.learn(certain(101), now), None, "confirmed, unchanged");
        b.expire(now + PROVISIONAL_FOR * 2);
        assert_eq!(b.get(), Some(100));
    }
}
