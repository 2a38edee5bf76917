//! Connection planning: how many connection attempts the waiters call for,
//! within the per-host cap, counting attempts in flight (but not stalled
//! ones), exclusive (HTTP/1.1) connections coming back from a drain, and
//! slots per shared (HTTP/2) connection (the server's limit, or the budget
//! learnt from GOAWAYs).

use super::*;

impl<P: Protocol> OriginPool<P> {
    /// How many new connection attempts to start for the waiters that no
    /// attempt in flight (or draining HTTP/1.1 connection) already covers,
    /// within the per-host cap.
    pub(super) fn connects_needed(&self, st: &mut State<P>) -> usize {
        let config = &self.shared.config;
        let cap = config.max_connections_per_host;
        let waiting = st.waiters.len();
        // Attempts that may still bring a connection soon.
        let covering = st.connecting - st.stalled;
        let mut n = 0;
        match st.protocol {
            Speaks::Unknown => {
                if waiting > 0 && covering == 0 && st.open + st.connecting < cap {
                    n = 1;
                }
            }
            Speaks::Exclusive => {
                while waiting > covering + st.draining + n && st.open + st.connecting + n < cap {
                    n += 1;
                }
            }
            Speaks::Shared => {
                let Some(per_conn) = st.slots_hint.map(|n| n.max(1)) else {
                    // Until one connection has told us the stream limit, one
                    // probe (an attempt, or a connection whose peer has not
                    // declared its slots yet): guessing could open several
                    // connections where one would have carried everything.
                    let probing = covering > 0 || st.shared_conns.iter().any(|s| !s.retiring);
                    if waiting > 0 && !probing && st.open + st.connecting < cap {
                        n = 1;
                    }
                    st.connecting += n;
                    return n;
                };
                let per_conn = st.budget.get().map_or(per_conn, |b| per_conn.min(b));
                if st.shared_conns.any_says_none() {
                    // A live connection says "no streams for now": its
                    // waiters wait for the limit to rise (or their deadline);
                    // another connection would most likely be told the same.
                } else if !config.more_shared_when_full {
                    let serving = st.shared_conns.iter().any(|s| !s.retiring);
                    if waiting > 0 && !serving && covering == 0 && st.open + st.connecting < cap {
                        n = 1;
                    }
                } else {
                    while waiting > (covering + n) * per_conn && st.open + st.connecting + n < cap {
                        n += 1;
                    }
                    if n == 0
                        && covering == 0
                        && st.open + st.connecting < cap
                        && st.runs_short(per_conn)
                    {
                        n = 1;
                    }
                }
            }
        }
        st.connecting += n;
        n
    }

    pub(super) fn spawn_connects(self: &Arc<Self>, n: usize) {
        if n == 0 {
            return;
        }
        // Off the runtime (a connection closed on a plain thread), nothing
        // can be dialled: the next checkout plans again.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        for _ in 0..n {
            runtime.spawn(Arc::clone(self).connect());
        }
    }
}

impl<P: Protocol> State<P> {
    /// Requests that only a new connection will do (the retry of one that
    /// a reused connection failed) wait at the per-host cap, with no dial
    /// on its way, while connections they cannot take sit idle: as many of
    /// the longest idle are closed (once the lock is released), and each
    /// close plans a dial. They waited for the idle timeout otherwise (60 s
    /// by default), or for ever without one.
    pub(super) fn make_room_for_fresh(&mut self, cap: usize) {
        if self.idle.is_empty() || self.connecting > 0 || self.open < cap {
            return;
        }
        let fresh = self
            .waiters
            .iter()
            .filter(|w| w.fresh_only && !w.tx.is_closed())
            .count();
        // Connections already closing free their places too.
        for _ in self.closing.len()..fresh {
            let Some(idle) = self.idle.pop_oldest() else {
                return;
            };
            self.closing.push(idle.conn);
        }
    }

    /// With a learnt budget: streams are in demand and the connections still
    /// serving have less than half a connection's worth of them left, so
    /// the next connection should be opened before anyone has to wait for it.
    pub(super) fn runs_short(&self, per_conn: usize) -> bool {
        let Some(budget) = self.budget.get() else {
            return false;
        };
        let demand = !self.waiters.is_empty() || self.shared_conns.iter().any(|s| s.active > 0);
        if !demand {
            return false;
        }
        // Stops counting once enough is left: at thousands of connections
        // (long polls) the walk would otherwise be every planning's cost.
        let enough = per_conn.div_ceil(2);
        let mut left = 0;
        for s in self.shared_conns.iter().filter(|s| !s.retiring) {
            left += budget.saturating_sub(s.opened);
            if left >= enough {
                return false;
            }
        }
        true
    }
}

/// How long a connection attempt runs before it no longer stands for the
/// connection a waiter needs: a quarter of `connect_timeout` (2.5 s by
/// default), at least 100 ms. A TLS handshake the server never answers
/// would otherwise hold every request of the origin for the whole timeout.
pub(super) fn stall_after(connect_timeout: Duration) -> Duration {
    (connect_timeout / 4).max(Duration::from_millis(100))
}
