//! Adaptive health (Vostok's `AdaptiveHealthWithLinearDecay` without the
//! decay): a weight in (0, 1] per replica, ×1.5 on an accepted answer (up to
//! 1), ×0.5 on a rejected one (down to 0.001).
//!
//! Why multiplicative: a replica failing every request loses half its
//! traffic per failure, so a handful of failures take it out of rotation,
//! while a few successes bring it back; the floor keeps it reachable (and
//! still tried last) so it can prove it recovered.

/// Health of a replica never judged.
pub(crate) const MAX: f64 = 1.0;
/// The lowest health (Vostok: 0.001).
pub(crate) const MIN: f64 = 0.001;
const UP: f64 = 1.5;
const DOWN: f64 = 0.5;

/// After an accepted answer.
pub(crate) fn up(health: f64) -> f64 {
    (health * UP).min(MAX)
}

/// After a rejected answer or an error.
pub(crate) fn down(health: f64) -> f64 {
    (health * DOWN).max(MIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_to_the_floor_and_climbs_back() {
        let mut h = MAX;
        for _ in 0..20 {
            h = down(h);
        }
        assert_eq!(h, MIN);
        h = up(h);
        assert!((h - 0.0015).abs() < 1e-12);
        for _ in 0..20 {
            h = up(h);
        }
        assert_eq!(h, MAX);
    }
}
