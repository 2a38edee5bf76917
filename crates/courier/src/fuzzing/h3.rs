//! HTTP/3's parsers of what a peer sends: a request stream's frames, and
//! the `Alt-Svc` value that leads a client to HTTP/3.

use crate::connect::alt_svc::{self, AltSvc};
use crate::proto::h3::frame::{read_all, Frame};

/// Reads `wire` as one stream's frames (non-DATA frames up to `max`
/// bytes) whole, and again cut into chunks at `cuts`: the frames, and the
/// error if any, must be the same however the stream arrives, and no frame
/// but DATA may exceed `max`. Panics otherwise.
pub fn h3_frames(wire: &[u8], cuts: &[usize], max: u64) {
    let whole = read_all(max, wire, &[]);
    let mut cuts = cuts.to_vec();
    cuts.sort_unstable();
    let cut = read_all(max, wire, &cuts);
    assert_eq!(whole, cut, "read whole and cut at {cuts:?}");
    for frame in whole.iter().flatten() {
        if let Frame::Headers(block) = frame {
            assert!(block.len() as u64 <= max, "a HEADERS frame over the bound");
        }
    }
}

/// Parses `value` as an `Alt-Svc` field value: every bound the peer meets
/// must hold of what is read. Panics otherwise.
pub fn alt_svc(value: &[u8]) {
    let Ok(parsed) = alt_svc::parse(value) else {
        return;
    };
    assert!(value.len() <= alt_svc::MAX_VALUE_LEN);
    let AltSvc::Services(services) = parsed else {
        return;
    };
    assert!(services.len() <= alt_svc::MAX_ENTRIES);
    for alt in &services {
        assert_ne!(alt.port, 0, "{alt:?}");
        assert!(alt.max_age <= alt_svc::MAX_MAX_AGE, "{alt:?}");
        if let Some(host) = &alt.host {
            assert!(!host.is_empty() && host.len() <= 253, "{alt:?}");
            assert!(!host.bytes().any(|b| b.is_ascii_uppercase()), "{alt:?}");
        }
    }
}
