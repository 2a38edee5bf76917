//! Arbitrary bytes as an HTTP/1.1 server's answer, read by courier and by
//! hyper's client (the harness of `tests/it/differential.rs`): any disagreement
//! about where the first response ends or whether the connection can carry
//! the second request is a finding, as is courier taking a body hyper
//! refuses. Where the harness knows hyper to be wrong about the input,
//! courier is held to the corrected input instead: it must read the bytes
//! exactly as it reads them corrected (or refuse them), and on the corrected
//! bytes the two must not disagree about framing.
//!
//! The first byte chooses the method (bit 0: HEAD) and whether the server
//! closes after its answer (bit 1); the rest is the answer.
#![no_main]

use http::Method;
use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../crates/courier/tests/it/differential/harness.rs"]
mod harness;

use harness::{Script, Verdict};

fuzz_target!(|data: &[u8]| {
    // Larger answers add nothing to framing, and the harness relies on one
    // read taking all the server sent.
    let Some((&flags, first)) = data.split_first() else {
        return;
    };
    if first.len() > 4096 {
        return;
    }
    let method = if flags & 1 == 1 {
        Method::HEAD
    } else {
        Method::GET
    };
    let script = Script {
        method: &method,
        first,
        close: flags & 2 == 2,
    };
    // Paused: a body that never ends times out at once.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("runtime");
    let (courier, hyper, verdict) = rt.block_on(harness::run(script));
    if let Some(known) = harness::hyper_known_wrong(first) {
        let held = rt.block_on(harness::known_wrong_holds(script, &courier, &known));
        assert!(
            held.is_ok(),
            "{}: {held:?}\ncourier {:?} unread {:?}\nhyper {hyper:?}",
            known.reason,
            courier.record,
            String::from_utf8_lossy(&courier.read.unread)
        );
        return;
    }
    let finding = matches!(verdict, Verdict::Framing(_) | Verdict::HyperRejectsBody);
    assert!(
        !finding,
        "{verdict:?}\ncourier {:?} unread {:?}\nhyper {hyper:?}",
        courier.record,
        String::from_utf8_lossy(&courier.read.unread)
    );
});
