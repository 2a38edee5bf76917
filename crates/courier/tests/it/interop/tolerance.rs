//! The suite's tolerances: faults of a third-party server that courier
//! cannot help, each scoped to the server, protocols, checks and typed error
//! its evidence shows, bounded per check and per run by that evidence, and
//! counted in the matrix. A run in which one absorbs more than its bound
//! fails: past the evidence, it is as likely to be courier's fault.
//!
//! Re-runs are the other escape hatch, and are bounded here too: only the
//! short run re-runs a check, only after a failure of a kind a loaded 2-core
//! machine can cause (a deadline passed), once; the cell is then `flaky`,
//! never `ok`, and more than [`MAX_FLAKY`] of them fail the run.

/// A server fault the suite absorbs, where its evidence says it may strike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tolerance {
    /// Caddy 2.6.2 stalls an upload sent with `Expect: 100-continue`
    /// through `reverse_proxy` (see `servers/caddy.rs`).
    UploadStall,
    /// hypercorn (python-h2) cuts the responses in flight on a connection
    /// that reaches its request limit (see `servers/contract.rs`).
    GoawayCut,
    /// Caddy 2.6.2 forwards an HTTP/3 upload without `content-length` (a
    /// streamed one) as empty (see `servers/caddy.rs`).
    H3StreamedUploadDropped,
    /// hypercorn's HTTP/3 never ends a stream after its trailer section
    /// (see `servers/contract.rs`).
    H3TrailersUnended,
    /// hypercorn's QUIC listener dies of a request's end (FIN) that comes
    /// after the response (see `servers/contract.rs`).
    H3LateFinKills,
    /// hypercorn's QUIC, loaded, lets some busy connections reach its idle
    /// timeout (see `servers/contract.rs`).
    H3IdleStall,
}

/// Flaky cells a run may have before it fails. A re-run is granted only to
/// a request deadline that passed ([`rerun_worthy`]); such flakes were
/// seen about once in hundreds of cell runs on this machine under a build,
/// so two in one run of ~860 cells is already unusual, and a third is more
/// likely a courier stall that comes and goes than the machine.
pub const MAX_FLAKY: usize = 2;

/// Failure kinds worth a second run in the short run: a request's own
/// deadline that passed, which a loaded machine can cause. Never
/// `mismatch` (a wrong answer is wrong however loaded the machine), nor a
/// protocol, body or connection error, nor `hang`: the suite's own limit on
/// a check is three request timeouts and more, so a check past it ignored
/// a deadline, which is courier's fault, not the machine's.
pub fn rerun_worthy(kind: &str) -> bool {
    matches!(kind, "timeout" | "connect_timeout" | "pool_queue_timeout")
}

impl Tolerance {
    pub const ALL: [Tolerance; 6] = [
        Tolerance::UploadStall,
        Tolerance::GoawayCut,
        Tolerance::H3StreamedUploadDropped,
        Tolerance::H3TrailersUnended,
        Tolerance::H3LateFinKills,
        Tolerance::H3IdleStall,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Tolerance::UploadStall => "caddy-upload-stall",
            Tolerance::GoawayCut => "hypercorn-goaway-cut",
            Tolerance::H3StreamedUploadDropped => "caddy-h3-streamed-upload",
            Tolerance::H3TrailersUnended => "hypercorn-h3-trailers",
            Tolerance::H3LateFinKills => "hypercorn-h3-late-fin",
            Tolerance::H3IdleStall => "hypercorn-h3-idle-stall",
        }
    }

    /// Where it applies, and what it absorbs there.
    pub fn scope(self) -> &'static str {
        match self {
            Tolerance::UploadStall => {
                "Caddy, h1 and tls-h1, the upload request of echo, echo-stream, chunked and \
                 expect-100 (sent with Expect: 100-continue): `timeout`, before the response \
                 head or while reading the echo; the check ends there"
            }
            Tolerance::GoawayCut => {
                "hypercorn with a request limit (tight: 100; default: hypercorn's own 1,000), \
                 h2c and tls-h2, 200-conc, idle-gap, req-limit, load and bench: a `body` error \
                 that is the server closing the connection after its GOAWAY \
                 (Error::is_closed_after_goaway)"
            }
            Tolerance::H3StreamedUploadDropped => {
                "Caddy, h3, echo-stream (an upload of unknown length, so without \
                 content-length): a 200 echo of 0 bytes; the check ends there"
            }
            Tolerance::H3TrailersUnended => {
                "hypercorn, h3, trailers: the whole 64 KiB body arrived byte for byte, then \
                 the stream never ended (the read's deadline, or the connection's idle \
                 timeout); the check ends there"
            }
            Tolerance::H3LateFinKills => {
                "hypercorn, h3, a check that failed when the server's QUIC listener had \
                 died (a new connection's request unanswered within 3 s): one per death. \
                 hypercorn's HTTP/3 runs in a process of its own, restarted before the \
                 next check (at most 2 times a row); only past that are the row's later \
                 checks not run, listed with 0"
            }
            Tolerance::H3IdleStall => {
                "hypercorn, h3, tight profile (QUIC idle timeout 2 s), load and bench: a \
                 `connection_closed` error that is the QUIC connection's idle timeout \
                 (quinn's `timed out`), in a check whose other requests were answered"
            }
        }
    }

    /// The most one check may absorb.
    pub fn per_check(self) -> u64 {
        match self {
            // A stalled upload ends its check.
            Tolerance::UploadStall => 1,
            // Seen: 1 or 2 in a load run, 1 of 200 in 200-conc, 0-2 in
            // `courier bench -c 512` (18 runs), h2load 5 of 200 on one
            // connection; then 12 in a full run (e99a5cd) and 29 of 710 in
            // the short run's load check (64 in flight) on a loaded machine
            // (the clean-clone CI at 2e2f477). python-h2 drops every
            // response still unsent when it sends its GOAWAY, on each
            // connection that reaches the limit, so the count follows how
            // far behind the server is, not courier. The bound is what one
            // connection can have in flight in the short load, 64: more
            // means streams past the learnt budget (a bench once lost 99
            // so, at 2f5491c; not seen again).
            Tolerance::GoawayCut => 64,
            // Each ends its check.
            Tolerance::H3StreamedUploadDropped
            | Tolerance::H3TrailersUnended
            | Tolerance::H3LateFinKills => 1,
            // Seen: 18 (a full run at bcdbbbc), 87 and 108 (`courier bench
            // -c 512` against the tight profile's hypercorn, by hand). A
            // stalled connection loses what it carries: up to aioquic's 128
            // streams, each then resent once (idempotent, lost unanswered)
            // and possibly lost again on another stalled connection. The
            // bound is two connections' worth; more means courier lost
            // requests on connections hypercorn still served.
            Tolerance::H3IdleStall => 256,
        }
    }

    /// The most one run may absorb, over all its cells.
    pub fn per_run(self) -> u64 {
        match self {
            // Seen: one stall in 4 of about 40 full runs, two in the run at
            // b9c6abd.
            Tolerance::UploadStall => 2,
            // Seen: 1-3 per full run (one cell of 2, or three cells of 1);
            // 12 and 29 in one cell (above).
            Tolerance::GoawayCut => 80,
            // Every run, once per profile (each is certain, not a race).
            Tolerance::H3StreamedUploadDropped | Tolerance::H3TrailersUnended => 2,
            // Deaths, not cells. Seen while a death ended the row (so at
            // most one per profile): in 200-conc, req-limit or load, in one
            // profile or both (every hypercorn-only full run at 6f0d14b,
            // 4f06b92 and 96b9227 had one or two). A restarted listener meets
            // the heaviest checks afresh: room for one more per profile.
            Tolerance::H3LateFinKills => 4,
            // The load and bench checks of one profile.
            Tolerance::H3IdleStall => 512,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_deadlines_are_rerun() {
        for kind in ["timeout", "connect_timeout", "pool_queue_timeout"] {
            assert!(rerun_worthy(kind), "{kind}");
        }
        for kind in [
            "hang",
            "mismatch",
            "body",
            "protocol",
            "connection_closed",
            "metrics",
            "panic",
            "refused",
        ] {
            assert!(!rerun_worthy(kind), "{kind}");
        }
    }

    /// A listener that dies costs one death, in the check that found it:
    /// restarted, the row's later checks run; past the restarts they are
    /// not run and count 0. The bound counts deaths, wherever they come.
    #[test]
    fn a_dead_listener_counts_once_wherever_it_dies() {
        use super::super::checks::Outcome;
        use super::super::matrix::{Matrix, Row};
        let tolerated = |count| Outcome::Tolerated {
            tolerance: Tolerance::H3LateFinKills,
            count,
            note: String::new(),
        };
        // `deaths`: the checks that found it dead; `gave_up`: no restart
        // after the last one.
        let row = |profile, deaths: &[usize], gave_up: bool| Row {
            server: "hypercorn".into(),
            profile,
            proto: "h3",
            cells: (0..18)
                .map(|i| match i {
                    i if deaths.contains(&i) => ("died", tolerated(1)),
                    i if gave_up && deaths.last().is_some_and(|&last| i > last) => {
                        ("not-run", tolerated(0))
                    }
                    _ => ("ok", Outcome::Ok(String::new())),
                })
                .collect(),
            restarts: u32::try_from(deaths.len()).unwrap() - u32::from(gave_up),
        };
        let mut matrix = Matrix {
            rows: vec![row("default", &[14], false), row("tight", &[3], false)],
            ..Matrix::default()
        };
        assert!(matrix.failures().is_empty(), "{:?}", matrix.failures());
        assert_eq!(matrix.counts().ok, 34, "a restarted row runs on");
        let counts = matrix.ci_counts();
        let restarts = counts.iter().find(|(key, _)| key == "restarts");
        assert_eq!(
            restarts.map(|(_, n)| n.as_str()),
            Some("2"),
            "CI's summary counts the restarts: {counts:?}"
        );
        // Deaths up to the bound, one row past its restarts.
        matrix.rows = vec![row("default", &[2, 9], false), row("tight", &[0, 5], true)];
        assert_eq!(Tolerance::H3LateFinKills.per_run(), 4);
        assert!(matrix.failures().is_empty(), "{:?}", matrix.failures());
        // One more is over.
        matrix.rows.push(row("tight", &[0], false));
        assert_eq!(matrix.failures().len(), 1, "{:?}", matrix.failures());
    }
}
