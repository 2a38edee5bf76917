//! Choosers: how an ordering draws the next replica from the candidates —
//! weighted random sampling on each replica's weight (Vostok), or the power
//! of two choices on a [`Load`] (Mitzenmacher; tower's `p2c`, Finagle).
//!
//! Why apart from the figures: a chooser reads one number per replica and
//! knows nothing of how it was measured; the weights are made in
//! `ordering::candidates`, the loads in `load.rs`.

use std::sync::Arc;

use super::load::Load;
use super::state::{ReplicaState, Standing};

/// A way of drawing replicas, one after another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Chooser {
    /// Weighted random sampling without replacement on `Standing::weight`;
    /// a weight of 0 puts the replica with the gray ones, last.
    WeightedRandom,
    /// Of two replicas drawn at random, the one with the lower load first.
    PowerOfTwo(Load),
}

type Candidate = (Arc<ReplicaState>, Standing);

impl Chooser {
    /// Whether this chooser reads the weights (so that what only feeds
    /// them, relative weights, is kept up to date).
    pub(crate) fn reads_weights(self) -> bool {
        matches!(self, Chooser::WeightedRandom)
    }

    /// Whether `st` is drawn from at all, or put with the gray ones, last.
    fn draws(self, st: &Standing) -> bool {
        !st.gray && (!self.reads_weights() || st.weight > 0.0)
    }

    /// The first `max` of `candidates`: drawn ones first, in this
    /// chooser's order, then the rest (gray) shuffled.
    pub(crate) fn order(
        self,
        candidates: &[Candidate],
        rng: &mut fastrand::Rng,
        max: usize,
    ) -> Vec<Arc<ReplicaState>> {
        let (mut left, mut tail): (Vec<_>, Vec<_>) =
            candidates.iter().partition(|(_, st)| self.draws(st));
        let mut out = Vec::with_capacity(max.min(candidates.len()));
        match self {
            Chooser::WeightedRandom => weighted(&mut left, rng, max, &mut out),
            Chooser::PowerOfTwo(load) => two_choices(&mut left, load, rng, max, &mut out),
        }
        rng.shuffle(&mut tail);
        let room = max.saturating_sub(out.len());
        out.extend(tail.into_iter().take(room).map(|(s, _)| Arc::clone(s)));
        out
    }
}

fn weighted(
    left: &mut Vec<&Candidate>,
    rng: &mut fastrand::Rng,
    max: usize,
    out: &mut Vec<Arc<ReplicaState>>,
) {
    let mut weights: Vec<f64> = left.iter().map(|(_, st)| st.weight).collect();
    while out.len() < max && !left.is_empty() {
        let total: f64 = weights.iter().sum();
        let mut point = rng.f64() * total;
        let mut pick = left.len() - 1;
        for (i, w) in weights.iter().enumerate() {
            if point < *w {
                pick = i;
                break;
            }
            point -= w;
        }
        weights.swap_remove(pick);
        out.push(Arc::clone(&left.swap_remove(pick).0));
    }
}

fn two_choices(
    left: &mut Vec<&Candidate>,
    load: Load,
    rng: &mut fastrand::Rng,
    max: usize,
    out: &mut Vec<Arc<ReplicaState>>,
) {
    while out.len() < max && !left.is_empty() {
        let pick = if left.len() == 1 {
            0
        } else {
            let a = rng.usize(..left.len());
            let b = (a + 1 + rng.usize(..left.len() - 1)) % left.len();
            if load.of(&left[b].0) < load.of(&left[a].0) {
                b
            } else {
                a
            }
        };
        out.push(Arc::clone(&left.swap_remove(pick).0));
    }
}
