//! Decoding: one frame the reader has cut out of its buffer, checked for
//! everything a frame can be checked for on its own (RFC 9113 §4, §6).

use std::ops::Range;

use bytes::Bytes;

use super::*;

/// Decodes one frame whose header is `head` and whose payload is `payload`
/// (exactly `head.len` bytes).
///
/// Does not check `head.len` against the frame size limit: the reader does,
/// before it buffers the payload. Flags a frame type does not define are
/// ignored (RFC 9113 §4.1).
pub(crate) fn decode(head: Head, payload: Bytes) -> Result<Frame, FrameError> {
    debug_assert_eq!(
        head.len as usize,
        payload.len(),
        "the reader cuts exactly the payload the header announces"
    );
    match head.kind {
        kind::DATA => decode_data(head, payload),
        kind::HEADERS => decode_headers(head, payload),
        kind::PRIORITY => decode_priority(head, &payload),
        kind::RST_STREAM => decode_rst_stream(head, &payload),
        kind::SETTINGS => decode_settings(head, payload),
        kind::PUSH_PROMISE => decode_push_promise(head, &payload),
        kind::PING => decode_ping(head, &payload),
        kind::GOAWAY => decode_goaway(head, payload),
        kind::WINDOW_UPDATE => decode_window_update(head, &payload),
        kind::CONTINUATION => decode_continuation(head, payload),
        // Unknown frame types are ignored (§4.1, §5.5).
        _ => Ok(Frame::Ignored),
    }
}

/// RFC 9113 §6.1.
fn decode_data(head: Head, payload: Bytes) -> Result<Frame, FrameError> {
    let stream = on_a_stream(head, "DATA on stream 0")?;
    let data = unpadded(head.flags, &payload, 0)?;
    Ok(Frame::Data {
        stream,
        end_stream: head.flags & END_STREAM != 0,
        data: payload.slice(data),
        flow_len: head.len,
    })
}

/// RFC 9113 §6.2. The priority fields are skipped unread (§5.3.2 deprecates
/// them). RFC 7540's stream error for a stream depending on itself is left
/// out on purpose: the fragment must reach HPACK regardless, or the
/// connection's decoding context would go out of step.
fn decode_headers(head: Head, payload: Bytes) -> Result<Frame, FrameError> {
    let stream = on_a_stream(head, "HEADERS on stream 0")?;
    let priority = if head.flags & PRIORITY != 0 {
        PRIORITY_LEN
    } else {
        0
    };
    let fragment = unpadded(head.flags, &payload, priority)?;
    Ok(Frame::Headers {
        stream,
        end_stream: head.flags & END_STREAM != 0,
        end_headers: head.flags & END_HEADERS != 0,
        fragment: payload.slice(fragment),
    })
}

/// RFC 9113 §6.3: checked, then ignored.
fn decode_priority(head: Head, payload: &[u8]) -> Result<Frame, FrameError> {
    let stream = on_a_stream(head, "PRIORITY on stream 0")?;
    if payload.len() != PRIORITY_LEN {
        return Err(FrameError::on_stream(
            stream,
            Reason::FRAME_SIZE_ERROR,
            "PRIORITY not 5 bytes long",
        ));
    }
    Ok(Frame::Ignored)
}

/// RFC 9113 §6.4.
fn decode_rst_stream(head: Head, payload: &[u8]) -> Result<Frame, FrameError> {
    let stream = on_a_stream(head, "RST_STREAM on stream 0")?;
    let Ok(code) = <[u8; 4]>::try_from(payload) else {
        return Err(FrameError::conn(
            Reason::FRAME_SIZE_ERROR,
            "RST_STREAM not 4 bytes long",
        ));
    };
    Ok(Frame::RstStream {
        stream,
        reason: Reason(u32::from_be_bytes(code)),
    })
}

/// RFC 9113 §6.5: every value the RFC bounds is checked here, so the caller
/// can apply the list as it iterates.
fn decode_settings(head: Head, payload: Bytes) -> Result<Frame, FrameError> {
    on_stream_0(head, "SETTINGS on a stream")?;
    if head.flags & ACK != 0 {
        if !payload.is_empty() {
            return Err(FrameError::conn(
                Reason::FRAME_SIZE_ERROR,
                "SETTINGS acknowledgement with a payload",
            ));
        }
        return Ok(Frame::Settings {
            ack: true,
            settings: SettingsList::default(),
        });
    }
    if payload.len() % SETTING_LEN != 0 {
        return Err(FrameError::conn(
            Reason::FRAME_SIZE_ERROR,
            "SETTINGS length not a multiple of 6",
        ));
    }
    let settings = SettingsList(payload);
    for (id, value) in &settings {
        check_setting(id, value)?;
    }
    Ok(Frame::Settings {
        ack: false,
        settings,
    })
}

/// RFC 9113 §6.5.2, for a server's settings.
fn check_setting(id: u16, value: u32) -> Result<(), FrameError> {
    match id {
        // Besides any value but 0 or 1, a server must not send 1, and a
        // client must treat it as a connection error.
        setting::ENABLE_PUSH if value != 0 => Err(FrameError::conn(
            Reason::PROTOCOL_ERROR,
            "server sent SETTINGS_ENABLE_PUSH other than 0",
        )),
        // RFC 8441 §3: 0 or 1, anything else a connection error.
        setting::ENABLE_CONNECT_PROTOCOL if value > 1 => Err(FrameError::conn(
            Reason::PROTOCOL_ERROR,
            "SETTINGS_ENABLE_CONNECT_PROTOCOL other than 0 or 1",
        )),
        setting::INITIAL_WINDOW_SIZE if value > MAX_WINDOW => Err(FrameError::conn(
            Reason::FLOW_CONTROL_ERROR,
            "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1",
        )),
        setting::MAX_FRAME_SIZE
            if !(DEFAULT_MAX_FRAME_SIZE..=MAX_MAX_FRAME_SIZE).contains(&value) =>
        {
            Err(FrameError::conn(
                Reason::PROTOCOL_ERROR,
                "SETTINGS_MAX_FRAME_SIZE outside 16384..=16777215",
            ))
        }
        _ => Ok(()),
    }
}

/// RFC 9113 §6.6: checked so a malformed frame gets the right error code;
/// the caller rejects a well-formed one anyway.
fn decode_push_promise(head: Head, payload: &[u8]) -> Result<Frame, FrameError> {
    let stream = on_a_stream(head, "PUSH_PROMISE on stream 0")?;
    unpadded(head.flags, payload, PROMISED_ID_LEN)?;
    Ok(Frame::PushPromise { stream })
}

/// RFC 9113 §6.7.
fn decode_ping(head: Head, payload: &[u8]) -> Result<Frame, FrameError> {
    on_stream_0(head, "PING on a stream")?;
    let Ok(payload) = <[u8; 8]>::try_from(payload) else {
        return Err(FrameError::conn(
            Reason::FRAME_SIZE_ERROR,
            "PING not 8 bytes long",
        ));
    };
    Ok(Frame::Ping {
        ack: head.flags & ACK != 0,
        payload,
    })
}

/// RFC 9113 §6.8.
fn decode_goaway(head: Head, payload: Bytes) -> Result<Frame, FrameError> {
    on_stream_0(head, "GOAWAY on a stream")?;
    let Some(&[l0, l1, l2, l3, c0, c1, c2, c3]) = payload.first_chunk::<8>() else {
        return Err(FrameError::conn(
            Reason::FRAME_SIZE_ERROR,
            "GOAWAY shorter than 8 bytes",
        ));
    };
    Ok(Frame::GoAway {
        last_stream: u32::from_be_bytes([l0, l1, l2, l3]) & U31_MASK,
        reason: Reason(u32::from_be_bytes([c0, c1, c2, c3])),
        debug: payload.slice(8..),
    })
}

/// RFC 9113 §6.9: a zero increment is an error where it was meant, on the
/// stream or on the connection.
fn decode_window_update(head: Head, payload: &[u8]) -> Result<Frame, FrameError> {
    let Ok(increment) = <[u8; 4]>::try_from(payload) else {
        return Err(FrameError::conn(
            Reason::FRAME_SIZE_ERROR,
            "WINDOW_UPDATE not 4 bytes long",
        ));
    };
    let increment = u32::from_be_bytes(increment) & U31_MASK;
    if increment == 0 {
        let what = "WINDOW_UPDATE with a zero increment";
        return Err(match head.stream {
            0 => FrameError::conn(Reason::PROTOCOL_ERROR, what),
            stream => FrameError::on_stream(stream, Reason::PROTOCOL_ERROR, what),
        });
    }
    Ok(Frame::WindowUpdate {
        stream: head.stream,
        increment,
    })
}

/// RFC 9113 §6.10.
fn decode_continuation(head: Head, payload: Bytes) -> Result<Frame, FrameError> {
    let stream = on_a_stream(head, "CONTINUATION on stream 0")?;
    Ok(Frame::Continuation {
        stream,
        end_headers: head.flags & END_HEADERS != 0,
        fragment: payload,
    })
}

/// The stream of a frame that must have one (a connection error otherwise).
fn on_a_stream(head: Head, what: &'static str) -> Result<u32, FrameError> {
    match head.stream {
        0 => Err(FrameError::conn(Reason::PROTOCOL_ERROR, what)),
        stream => Ok(stream),
    }
}

/// Checks that a connection-level frame came on stream 0.
fn on_stream_0(head: Head, what: &'static str) -> Result<(), FrameError> {
    match head.stream {
        0 => Ok(()),
        _ => Err(FrameError::conn(Reason::PROTOCOL_ERROR, what)),
    }
}

/// The range of `payload` after the Pad Length byte (when PADDED) and `fixed`
/// bytes of fields, and before the padding.
///
/// A payload too short for its fields is a FRAME_SIZE_ERROR (§4.2); padding
/// longer than what remains after them is a PROTOCOL_ERROR (§6.1, §6.2, §6.6).
/// Both are connection errors.
fn unpadded(flags: u8, payload: &[u8], fixed: usize) -> Result<Range<usize>, FrameError> {
    let (start, padding) = if flags & PADDED == 0 {
        (0, 0)
    } else {
        match payload.first() {
            Some(&padding) => (1, usize::from(padding)),
            None => {
                return Err(FrameError::conn(
                    Reason::FRAME_SIZE_ERROR,
                    "PADDED frame without a Pad Length",
                ))
            }
        }
    };
    let Some(rest) = (payload.len() - start).checked_sub(fixed) else {
        return Err(FrameError::conn(
            Reason::FRAME_SIZE_ERROR,
            "frame too short for its fields",
        ));
    };
    if padding > rest {
        return Err(FrameError::conn(
            Reason::PROTOCOL_ERROR,
            "padding longer than the frame",
        ));
    }
    Ok(start + fixed..payload.len() - padding)
}
