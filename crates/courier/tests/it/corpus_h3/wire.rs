//! HTTP/3 and QPACK bytes written by hand (RFC 9000 §16 varints, RFC 9114
//! §7 frames, RFC 9204 field lines and encoder instructions), so the
//! hostile server can send what no well-behaved encoder would.

/// Frame types (RFC 9114 §7.2, §11.2.1).
pub const DATA: u64 = 0x00;
pub const HEADERS: u64 = 0x01;
pub const SETTINGS: u64 = 0x04;
pub const GOAWAY: u64 = 0x07;
/// HTTP/2's PING, reserved in HTTP/3 (§7.2.8: a connection error).
pub const H2_PING: u64 = 0x06;
pub const PUSH_PROMISE: u64 = 0x05;
pub const CANCEL_PUSH: u64 = 0x03;
pub const MAX_PUSH_ID: u64 = 0x0d;

/// Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2).
pub const CONTROL: u64 = 0x00;
pub const PUSH: u64 = 0x01;
pub const QPACK_ENCODER: u64 = 0x02;
pub const QPACK_DECODER: u64 = 0x03;

/// A reserved ("grease") type or identifier: 0x1f * n + 0x21 (§7.2.8, §6.2.3).
pub fn grease(n: u64) -> u64 {
    0x1f * n + 0x21
}

/// A QUIC variable-length integer.
pub fn varint(v: u64) -> Vec<u8> {
    match v {
        0..=0x3f => vec![v as u8],
        0x40..=0x3fff => (v as u16 | 0x4000).to_be_bytes().to_vec(),
        0x4000..=0x3fff_ffff => (v as u32 | 0x8000_0000).to_be_bytes().to_vec(),
        _ => (v | 0xc000_0000_0000_0000).to_be_bytes().to_vec(),
    }
}

/// A frame: type, length, payload.
pub fn frame(ty: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = varint(ty);
    out.extend(varint(payload.len() as u64));
    out.extend_from_slice(payload);
    out
}

/// A frame's type and a declared length, without the payload (to be
/// sent after, or never).
pub fn frame_head(ty: u64, len: u64) -> Vec<u8> {
    let mut out = varint(ty);
    out.extend(varint(len));
    out
}

/// A SETTINGS frame of these pairs.
pub fn settings(pairs: &[(u64, u64)]) -> Vec<u8> {
    let payload: Vec<u8> = pairs
        .iter()
        .flat_map(|(id, v)| [varint(*id), varint(*v)].concat())
        .collect();
    frame(SETTINGS, &payload)
}

/// The start of a control stream: its type and a SETTINGS frame (a grease
/// setting, as real servers send, and MAX_FIELD_SECTION_SIZE).
pub fn control() -> Vec<u8> {
    [varint(CONTROL), settings(&[(0x06, 16384), (grease(3), 7)])].concat()
}

/// A GOAWAY frame naming stream `id`.
pub fn goaway(id: u64) -> Vec<u8> {
    frame(GOAWAY, &varint(id))
}

/// A QPACK prefixed integer (RFC 9204 §4.1.1) of `prefix` bits, the
/// first byte's higher bits `flags`.
pub fn prefix_int(flags: u8, prefix: u8, v: u64) -> Vec<u8> {
    let max = (1u64 << prefix) - 1;
    if v < max {
        return vec![flags | v as u8];
    }
    let mut out = vec![flags | max as u8];
    let mut rest = v - max;
    while rest >= 0x80 {
        out.push((rest as u8 & 0x7f) | 0x80);
        rest >>= 7;
    }
    out.push(rest as u8);
    out
}

/// A QPACK string literal, no Huffman, with a 7-bit length prefix.
fn string(s: &[u8]) -> Vec<u8> {
    [prefix_int(0, 7, s.len() as u64), s.to_vec()].concat()
}

/// A field section (static table only): `:status`, then `fields`, each a
/// literal with a literal name.
pub fn section(status: u16, fields: &[(&str, &[u8])]) -> Vec<u8> {
    // Required Insert Count 0, Delta Base 0.
    let mut out = vec![0x00, 0x00];
    // Indexed field line, static (T=1): :status 200 is index 25, 404 is 27.
    match status {
        200 => out.push(0xc0 | 25),
        _ => {
            // Literal with a static name reference (:status, index 24).
            out.extend(prefix_int(0x50, 4, 24));
            out.extend(string(status.to_string().as_bytes()));
        }
    }
    for (name, value) in fields {
        out.extend(literal(name.as_bytes(), value));
    }
    out
}

/// A literal field line with a literal name (RFC 9204 §4.5.6).
pub fn literal(name: &[u8], value: &[u8]) -> Vec<u8> {
    [
        prefix_int(0x20, 3, name.len() as u64),
        name.to_vec(),
        string(value),
    ]
    .concat()
}

/// A HEADERS frame of `section`.
pub fn headers(section: &[u8]) -> Vec<u8> {
    frame(HEADERS, section)
}

/// A control stream whose SETTINGS are `pairs`.
pub fn control_with(pairs: &[(u64, u64)]) -> Vec<u8> {
    [varint(CONTROL), settings(pairs)].concat()
}

/// `status` with a content-length and `body` in one DATA frame.
pub fn answer(status: u16, body: &[u8]) -> Vec<u8> {
    let len = body.len().to_string();
    [
        headers(&section(status, &[("content-length", len.as_bytes())])),
        frame(DATA, body),
    ]
    .concat()
}

/// A 200 with a content-length and `body` in one DATA frame.
pub fn ok(body: &[u8]) -> Vec<u8> {
    let len = body.len().to_string();
    [
        headers(&section(200, &[("content-length", len.as_bytes())])),
        frame(DATA, body),
    ]
    .concat()
}

/// A field section that references dynamic table entry 0, with a
/// Required Insert Count of 1: blocked until an insert that never comes
/// (the client announced a table of 0, so it is an error at once).
pub fn section_blocked() -> Vec<u8> {
    // Encoded Required Insert Count 2 (insert count 1), Delta Base 0, an
    // indexed field line (dynamic, T=0) of relative index 0.
    vec![0x02, 0x00, 0x80]
}

/// QPACK encoder stream: Set Dynamic Table Capacity (§4.3.1).
pub fn set_capacity(capacity: u64) -> Vec<u8> {
    prefix_int(0x20, 5, capacity)
}

/// QPACK encoder stream: Insert with Literal Name (§4.3.3).
pub fn insert(name: &[u8], value: &[u8]) -> Vec<u8> {
    [
        prefix_int(0x40, 5, name.len() as u64),
        name.to_vec(),
        string(value),
    ]
    .concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_prefix_ints() {
        assert_eq!(varint(37), [0x25]);
        assert_eq!(varint(15293), [0x7b, 0xbd]);
        assert_eq!(varint(494_878_333), [0x9d, 0x7f, 0x3e, 0x7d]);
        // RFC 7541 C.1.2: 1337 with a 5-bit prefix.
        assert_eq!(prefix_int(0, 5, 1337), [31, 154, 10]);
        assert_eq!(prefix_int(0, 5, 10), [10]);
    }
}
