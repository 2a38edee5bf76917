//! The frames that change what courier may send: the server's SETTINGS
//! (its limits, and the initial window of every stream) and WINDOW_UPDATE
//! (more send window), as h2's `Send` applies them.

use std::task::Waker;

use super::conn::State;
use super::error::{ConnError, StreamError};
use super::flood::Glitch;
use super::frame::setting;

pub(crate) fn on_settings(
    st: &mut State,
    settings: impl Iterator<Item = (u16, u32)>,
) -> Result<(), ConnError> {
    let first = !st.signals.settings_received();
    for (id, value) in settings {
        match id {
            setting::ENABLE_CONNECT_PROTOCOL => st.send.set_connect_protocol(value)?,
            setting::HEADER_TABLE_SIZE => st.send.set_header_table_size(value as usize),
            setting::MAX_CONCURRENT_STREAMS => {
                let max = usize::try_from(value).unwrap_or(usize::MAX);
                let rose = st.counts.set_max(max);
                st.signals.set_max_streams(max);
                if rose {
                    st.counts.wake_waiters();
                }
            }
            setting::INITIAL_WINDOW_SIZE => {
                let old = st.send.set_initial_window(value);
                let mut ready = Vec::new();
                for (key, stream) in st.streams.iter_mut() {
                    if let Err(e) = stream.send_window.apply_initial_change(old, value) {
                        return Err(ConnError::new(
                            e.reason(),
                            "SETTINGS_INITIAL_WINDOW_SIZE overflowed a stream window",
                        ));
                    }
                    if value > old && stream.upload.is_some() {
                        ready.push((key, stream.id));
                    }
                }
                for (key, id) in ready {
                    st.mark_ready(key, id);
                }
            }
            setting::MAX_FRAME_SIZE => st.send.set_max_frame(value),
            setting::MAX_HEADER_LIST_SIZE => st.send.set_max_header_list(value),
            _ => {}
        }
    }
    st.send.settings_ack();
    st.wake_driver();
    st.signals.settings_arrived();
    if first {
        // Extended CONNECTs wait for the first SETTINGS.
        st.counts.wake_waiters();
    }
    Ok(())
}

/// Applies a WINDOW_UPDATE.
pub(crate) fn on_window_update(
    st: &mut State,
    id: u32,
    increment: u32,
    wakers: &mut Vec<Waker>,
) -> Result<(), ConnError> {
    if id == 0 {
        let gives_back = match st.send.increase_window(increment) {
            Ok(gives_back) => gives_back,
            Err(e) => {
                return Err(ConnError::new(e.reason(), "connection window above 2^31-1"));
            }
        };
        if !st.send.has_ready() {
            if !gives_back {
                // Nothing used the window, nothing waits for more.
                return st.glitch(Glitch::WindowUpdate);
            }
            return Ok(());
        }
        st.wake_driver();
        return Ok(());
    }
    if st.is_idle(id) {
        return Err(ConnError::protocol(
            "WINDOW_UPDATE on a stream courier did not open",
        ));
    }
    let Some((key, stream)) = st.streams.by_id(id) else {
        return st.glitch(Glitch::ClosedStream);
    };
    if let Err(e) = stream.send_window.increase(increment) {
        st.reset(
            key,
            id,
            e.reason(),
            StreamError::Malformed("stream window above 2^31-1"),
            wakers,
        );
        return Ok(());
    }
    if stream.upload.is_none() || stream.state().is_send_closed() {
        // Nothing to send on it (servers send some as they read bodies).
        return st.glitch(Glitch::WindowUpdate);
    }
    st.mark_ready(key, id);
    st.wake_driver();
    Ok(())
}
