//! A connection on loan to one request.

use std::sync::Arc;

use super::conn::PooledConn;
use super::origin::OriginPool;

/// Exclusive use of a pooled connection for one request and its response body.
///
/// [`Lease::release`] hands the connection back (to a waiter or the idle
/// stack). Dropping a lease without releasing it closes the connection: that is
/// the safe default for any path that does not know the response was read to
/// its end (errors, timeouts, cancelled futures).
pub(crate) struct Lease {
    conn: Option<PooledConn>,
    origin: Arc<OriginPool>,
    keep_alive: bool,
}

impl Lease {
    pub(crate) fn new(conn: PooledConn, origin: Arc<OriginPool>) -> Lease {
        Lease {
            conn: Some(conn),
            origin,
            keep_alive: true,
        }
    }

    pub(crate) fn conn_mut(&mut self) -> &mut PooledConn {
        // Only `release` and `drop` take the connection out, and both consume the lease.
        self.conn
            .as_mut()
            .expect("lease holds a connection until released")
    }

    /// The server said it will close the connection: do not pool it.
    pub(crate) fn forbid_reuse(&mut self) {
        self.keep_alive = false;
    }

    pub(crate) fn origin(&self) -> &Arc<OriginPool> {
        &self.origin
    }

    /// The connection, if it may serve another request; consumes the lease
    /// without returning anything to the pool.
    pub(crate) fn into_reusable(mut self) -> Option<PooledConn> {
        let conn = self.conn.take();
        conn.filter(|_| self.keep_alive)
    }

    /// The response was read to its end: the connection can serve another request.
    pub(crate) fn release(mut self) {
        if let Some(conn) = self.conn.take() {
            if self.keep_alive {
                self.origin.put_back(conn);
            }
        }
    }
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("conn", &self.conn.as_ref().map(|c| c.id))
            .field("keep_alive", &self.keep_alive)
            .finish()
    }
}
