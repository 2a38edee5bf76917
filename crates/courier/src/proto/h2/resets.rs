//! Streams courier reset, remembered once their slots are freed: frames the
//! server sent before it read the RST_STREAM may still come for them, and
//! are ignored ([`super::closed`]). A bounded list.

use std::collections::VecDeque;

/// Resets remembered after their slot is freed: 4 KiB at most, and only on a
/// connection whose requests were cancelled while the server was sending.
const REMEMBERED: usize = 1024;

/// Streams courier reset, once their slots are gone.
#[derive(Debug, Default)]
pub(crate) struct Resets {
    recent: VecDeque<u32>,
    /// The highest id let go of: frames on streams up to it are tolerated.
    forgotten_up_to: u32,
}

impl Resets {
    /// Stream `id`, which courier reset, leaves the slab.
    pub(crate) fn remember(&mut self, id: u32) {
        if self.recent.len() == REMEMBERED {
            if let Some(old) = self.recent.pop_front() {
                self.forgotten_up_to = self.forgotten_up_to.max(old);
            }
        }
        self.recent.push_back(id);
    }

    /// Frames on stream `id` are ignored: courier reset it, or it is
    /// older than the ones remembered.
    pub(crate) fn tolerates(&self, id: u32) -> bool {
        id <= self.forgotten_up_to || self.recent.contains(&id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resets_are_remembered_within_the_bound_and_older_ones_tolerated() {
        let mut resets = Resets::default();
        assert!(!resets.tolerates(1));
        for id in (1..).step_by(2).take(REMEMBERED) {
            resets.remember(id);
        }
        assert!(resets.tolerates(1) && resets.tolerates(2047));
        assert!(!resets.tolerates(2), "a stream the server closed");
        resets.remember(5001);
        assert_eq!(resets.recent.len(), REMEMBERED, "bounded");
        assert!(
            resets.tolerates(1),
            "forgotten: given the benefit of the doubt"
        );
        assert!(resets.tolerates(5001));
        assert!(!resets.tolerates(4001));
    }
}
