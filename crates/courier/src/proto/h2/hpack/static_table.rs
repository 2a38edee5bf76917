//! The static table (RFC 7541 Appendix A): 61 fields both sides know,
//! indexes 1 to 61.

/// Entries in the static table; dynamic table indexes start after them.
pub(crate) const LEN: usize = 61;

/// The static table; index `i` is `STATIC[i - 1]`.
pub(crate) const STATIC: [(&[u8], &[u8]); LEN] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// A static table match for a field, for the encoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Match {
    /// Name and value: the field is this index.
    Field(usize),
    /// The name only, at this index.
    Name(usize),
}

/// Looks `name` and `value` up in the static table. One `match` on the
/// name (compiled to a switch on its length, then comparisons), as the
/// encoder does this for every field it writes.
pub(crate) fn find(name: &[u8], value: &[u8]) -> Option<Match> {
    let first = name_index(name)?;
    // Entries with the same name are adjacent; only a few have values.
    let same_name = STATIC[first - 1..].iter().take_while(|e| e.0 == name);
    for (i, entry) in same_name.enumerate() {
        if entry.1 == value {
            return Some(Match::Field(first + i));
        }
    }
    Some(Match::Name(first))
}

/// The first static index with this name.
fn name_index(name: &[u8]) -> Option<usize> {
    Some(match name {
        b":authority" => 1,
        b":method" => 2,
        b":path" => 4,
        b":scheme" => 6,
        b":status" => 8,
        b"accept-charset" => 15,
        b"accept-encoding" => 16,
        b"accept-language" => 17,
        b"accept-ranges" => 18,
        b"accept" => 19,
        b"access-control-allow-origin" => 20,
        b"age" => 21,
        b"allow" => 22,
        b"authorization" => 23,
        b"cache-control" => 24,
        b"content-disposition" => 25,
        b"content-encoding" => 26,
        b"content-language" => 27,
        b"content-length" => 28,
        b"content-location" => 29,
        b"content-range" => 30,
        b"content-type" => 31,
        b"cookie" => 32,
        b"date" => 33,
        b"etag" => 34,
        b"expect" => 35,
        b"expires" => 36,
        b"from" => 37,
        b"host" => 38,
        b"if-match" => 39,
        b"if-modified-since" => 40,
        b"if-none-match" => 41,
        b"if-range" => 42,
        b"if-unmodified-since" => 43,
        b"last-modified" => 44,
        b"link" => 45,
        b"location" => 46,
        b"max-forwards" => 47,
        b"proxy-authenticate" => 48,
        b"proxy-authorization" => 49,
        b"range" => 50,
        b"referer" => 51,
        b"refresh" => 52,
        b"retry-after" => 53,
        b"server" => 54,
        b"set-cookie" => 55,
        b"strict-transport-security" => 56,
        b"transfer-encoding" => 57,
        b"user-agent" => 58,
        b"vary" => 59,
        b"via" => 60,
        b"www-authenticate" => 61,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_agrees_with_the_table() {
        for (i, &(name, value)) in STATIC.iter().enumerate() {
            let index = i + 1;
            let first = STATIC.iter().position(|e| e.0 == name).unwrap() + 1;
            assert_eq!(name_index(name), Some(first), "{index}");
            assert_eq!(find(name, value), Some(Match::Field(index)), "{index}");
            assert_eq!(find(name, b"other"), Some(Match::Name(first)));
        }
        assert_eq!(find(b":method", b"GET"), Some(Match::Field(2)));
        assert_eq!(find(b":scheme", b"https"), Some(Match::Field(7)));
        assert_eq!(find(b":path", b"/"), Some(Match::Field(4)));
        assert_eq!(find(b":status", b"500"), Some(Match::Field(14)));
        // An empty value is a whole match where the table's value is empty.
        assert_eq!(find(b":authority", b""), Some(Match::Field(1)));
        assert_eq!(find(b":method", b""), Some(Match::Name(2)));
        assert_eq!(find(b"x-custom", b""), None);
        assert_eq!(find(b"Accept", b""), None);
    }
}
