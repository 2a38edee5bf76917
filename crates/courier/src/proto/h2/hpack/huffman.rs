//! Huffman-coded strings (RFC 7541 §5.2, Appendix B), shared by HPACK and
//! QPACK (RFC 9204 uses the same code). Decoding is for peers' strings;
//! HTTP/2 writes its own raw (see `encoder`), and QPACK's encoder codes a
//! string when that is shorter (`encoded_len`, `encode`).
//!
//! The code is canonical: the codes of one length are consecutive numbers,
//! and each length's first code follows on from the previous length's last.
//! So the length of the next code is found by comparing the next 32 bits,
//! left-aligned, against the end of each length's range, and its symbol is
//! an offset into a list of symbols sorted by code. A 512-entry table
//! resolves the codes of up to 9 bits (the usual letters, digits and
//! punctuation) in one look-up. All tables are built at compile time from
//! the Appendix B table below, which is also checked there to be canonical
//! and complete.

use super::DecodeError;

/// The end-of-string symbol: never in a string; padding is the start of its
/// code (all ones).
const EOS: u16 = 256;

/// Longest code, in bits.
const MAX_LEN: usize = 30;

/// Bits resolved by the first-level table.
const FAST_BITS: u32 = 9;

/// Decodes the Huffman-coded `src`, appending the bytes to `dst`.
///
/// Errors: the EOS symbol, or trailing bits that are not padding (up to 7
/// bits, all ones). Any other bit sequence decodes, as the code is complete.
pub(crate) fn decode(src: &[u8], dst: &mut Vec<u8>) -> Result<(), DecodeError> {
    // The shortest code is 5 bits: at most 8 symbols per 5 bytes.
    dst.reserve(src.len() * 8 / 5);
    // The next `bits` bits of input, right-aligned; the bits above are zero.
    let mut acc: u64 = 0;
    let mut bits: u32 = 0;
    let mut rest = src;
    loop {
        while bits <= 56 {
            let Some((&byte, tail)) = rest.split_first() else {
                break;
            };
            acc = (acc << 8) | u64::from(byte);
            bits += 8;
            rest = tail;
        }
        if bits == 0 {
            return Ok(());
        }
        // The next 32 bits, left-aligned; past the end, padded with ones as
        // the padding itself is.
        let window = if bits >= 32 {
            (acc >> (bits - 32)) as u32
        } else {
            ((acc << (32 - bits)) as u32) | (u32::MAX >> bits)
        };
        let (symbol, len) = lookup(window);
        if len > bits {
            // What is left holds no whole code: it must be padding, the
            // most significant bits of EOS (all ones), shorter than a byte.
            if bits > 7 {
                return Err(DecodeError::Invalid("Huffman padding longer than 7 bits"));
            }
            if acc != (1 << bits) - 1 {
                return Err(DecodeError::Invalid("Huffman padding not all ones"));
            }
            return Ok(());
        }
        if symbol == EOS {
            return Err(DecodeError::Invalid("Huffman-coded EOS symbol"));
        }
        dst.push(symbol as u8);
        bits -= len;
        acc &= (1 << bits) - 1;
    }
}

/// The symbol whose code starts `window` (left-aligned), and its length.
fn lookup(window: u32) -> (u16, u32) {
    let fast = TABLES.fast[(window >> (32 - FAST_BITS)) as usize];
    if fast != 0 {
        return (fast & 0x1ff, u32::from(fast >> 9));
    }
    let mut len = FAST_BITS as usize + 1;
    // `limit[MAX_LEN]` is 2^32, above any window: the loop ends there.
    while len < MAX_LEN && u64::from(window) >= TABLES.limit[len] {
        len += 1;
    }
    let code = window >> (32 - len);
    let index = TABLES.offset[len] as usize + (code - TABLES.first[len]) as usize;
    (TABLES.symbols[index], len as u32)
}

/// Decoding tables derived from [`CODES`].
struct Tables {
    /// First code of each length.
    first: [u32; MAX_LEN + 1],
    /// Left-aligned end (exclusive) of the codes of each length: a window
    /// below it starts with a code of at most this length.
    limit: [u64; MAX_LEN + 1],
    /// Index in `symbols` of each length's first code.
    offset: [u16; MAX_LEN + 1],
    /// Symbols in code order.
    symbols: [u16; 257],
    /// For each 9-bit window: `length << 9 | symbol` of the code it starts
    /// with, or 0 if that code is longer than 9 bits.
    fast: [u16; 1 << FAST_BITS],
}

const TABLES: Tables = build_tables();

const fn build_tables() -> Tables {
    let mut count = [0u32; MAX_LEN + 1];
    let mut symbol = 0;
    while symbol < CODES.len() {
        count[CODES[symbol].1 as usize] += 1;
        symbol += 1;
    }

    let mut first = [0u32; MAX_LEN + 1];
    let mut limit = [0u64; MAX_LEN + 1];
    let mut offset = [0u16; MAX_LEN + 1];
    let mut code = 0u32;
    let mut index = 0u16;
    let mut len = 1;
    while len <= MAX_LEN {
        first[len] = code;
        offset[len] = index;
        code += count[len];
        index += count[len] as u16;
        limit[len] = (code as u64) << (32 - len);
        code <<= 1;
        len += 1;
    }
    // Complete: every bit sequence starts with a code.
    assert!(limit[MAX_LEN] == 1 << 32);

    let mut symbols = [u16::MAX; 257];
    let mut fast = [0u16; 1 << FAST_BITS];
    let mut symbol = 0;
    while symbol < CODES.len() {
        let (code, len) = CODES[symbol];
        let len = len as usize;
        // Canonical: each code lies in its length's range.
        assert!(code >= first[len] && code - first[len] < count[len]);
        let index = (offset[len] as u32 + code - first[len]) as usize;
        assert!(symbols[index] == u16::MAX);
        symbols[index] = symbol as u16;
        if len as u32 <= FAST_BITS {
            let spread = FAST_BITS - len as u32;
            let mut i = 0;
            while i < 1 << spread {
                fast[((code << spread) + i) as usize] = ((len as u16) << 9) | symbol as u16;
                i += 1;
            }
        }
        symbol += 1;
    }
    Tables {
        first,
        limit,
        offset,
        symbols,
        fast,
    }
}

/// `(code, length in bits)` of each byte value, then of EOS: RFC 7541
/// Appendix B, codes right-aligned.
#[rustfmt::skip]
const CODES: [(u32, u8); 257] = [
    (0x1ff8, 13), // 0
    (0x7fffd8, 23), // 1
    (0xfffffe2, 28), // 2
    (0xfffffe3, 28), // 3
    (0xfffffe4, 28), // 4
    (0xfffffe5, 28), // 5
    (0xfffffe6, 28), // 6
    (0xfffffe7, 28), // 7
    (0xfffffe8, 28), // 8
    (0xffffea, 24), // 9
    (0x3ffffffc, 30), // 10
    (0xfffffe9, 28), // 11
    (0xfffffea, 28), // 12
    (0x3ffffffd, 30), // 13
    (0xfffffeb, 28), // 14
    (0xfffffec, 28), // 15
    (0xfffffed, 28), // 16
    (0xfffffee, 28), // 17
    (0xfffffef, 28), // 18
    (0xffffff0, 28), // 19
    (0xffffff1, 28), // 20
    (0xffffff2, 28), // 21
    (0x3ffffffe, 30), // 22
    (0xffffff3, 28), // 23
    (0xffffff4, 28), // 24
    (0xffffff5, 28), // 25
    (0xffffff6, 28), // 26
    (0xffffff7, 28), // 27
    (0xffffff8, 28), // 28
    (0xffffff9, 28), // 29
    (0xffffffa, 28), // 30
    (0xffffffb, 28), // 31
    (0x14, 6), // 32 ' '
    (0x3f8, 10), // 33 '!'
    (0x3f9, 10), // 34 '"'
    (0xffa, 12), // 35 '#'
    (0x1ff9, 13), // 36 '$'
    (0x15, 6), // 37 '%'
    (0xf8, 8), // 38 '&'
    (0x7fa, 11), // 39 '\''
    (0x3fa, 10), // 40 '('
    (0x3fb, 10), // 41 ')'
    (0xf9, 8), // 42 '*'
    (0x7fb, 11), // 43 '+'
    (0xfa, 8), // 44 ','
    (0x16, 6), // 45 '-'
    (0x17, 6), // 46 '.'
    (0x18, 6), // 47 '/'
    (0x0, 5), // 48 '0'
    (0x1, 5), // 49 '1'
    (0x2, 5), // 50 '2'
    (0x19, 6), // 51 '3'
    (0x1a, 6), // 52 '4'
    (0x1b, 6), // 53 '5'
    (0x1c, 6), // 54 '6'
    (0x1d, 6), // 55 '7'
    (0x1e, 6), // 56 '8'
    (0x1f, 6), // 57 '9'
    (0x5c, 7), // 58 ':'
    (0xfb, 8), // 59 ';'
    (0x7ffc, 15), // 60 '<'
    (0x20, 6), // 61 '='
    (0xffb, 12), // 62 '>'
    (0x3fc, 10), // 63 '?'
    (0x1ffa, 13), // 64 '@'
    (0x21, 6), // 65 'A'
    (0x5d, 7), // 66 'B'
    (0x5e, 7), // 67 'C'
    (0x5f, 7), // 68 'D'
    (0x60, 7), // 69 'E'
    (0x61, 7), // 70 'F'
    (0x62, 7), // 71 'G'
    (0x63, 7), // 72 'H'
    (0x64, 7), // 73 'I'
    (0x65, 7), // 74 'J'
    (0x66, 7), // 75 'K'
    (0x67, 7), // 76 'L'
    (0x68, 7), // 77 'M'
    (0x69, 7), // 78 'N'
    (0x6a, 7), // 79 'O'
    (0x6b, 7), // 80 'P'
    (0x6c, 7), // 81 'Q'
    (0x6d, 7), // 82 'R'
    (0x6e, 7), // 83 'S'
    (0x6f, 7), // 84 'T'
    (0x70, 7), // 85 'U'
    (0x71, 7), // 86 'V'
    (0x72, 7), // 87 'W'
    (0xfc, 8), // 88 'X'
    (0x73, 7), // 89 'Y'
    (0xfd, 8), // 90 'Z'
    (0x1ffb, 13), // 91 '['
    (0x7fff0, 19), // 92 '\\'
    (0x1ffc, 13), // 93 ']'
    (0x3ffc, 14), // 94 '^'
    (0x22, 6), // 95 '_'
    (0x7ffd, 15), // 96 '`'
    (0x3, 5), // 97 'a'
    (0x23, 6), // 98 'b'
    (0x4, 5), // 99 'c'
    (0x24, 6), // 100 'd'
    (0x5, 5), // 101 'e'
    (0x25, 6), // 102 'f'
    (0x26, 6), // 103 'g'
    (0x27, 6), // 104 'h'
    (0x6, 5), // 105 'i'
    (0x74, 7), // 106 'j'
    (0x75, 7), // 107 'k'
    (0x28, 6), // 108 'l'
    (0x29, 6), // 109 'm'
    (0x2a, 6), // 110 'n'
    (0x7, 5), // 111 'o'
    (0x2b, 6), // 112 'p'
    (0x76, 7), // 113 'q'
    (0x2c, 6), // 114 'r'
    (0x8, 5), // 115 's'
    (0x9, 5), // 116 't'
    (0x2d, 6), // 117 'u'
    (0x77, 7), // 118 'v'
    (0x78, 7), // 119 'w'
    (0x79, 7), // 120 'x'
    (0x7a, 7), // 121 'y'
    (0x7b, 7), // 122 'z'
    (0x7ffe, 15), // 123 '{'
    (0x7fc, 11), // 124 '|'
    (0x3ffd, 14), // 125 '}'
    (0x1ffd, 13), // 126 '~'
    (0xffffffc, 28), // 127
    (0xfffe6, 20), // 128
    (0x3fffd2, 22), // 129
    (0xfffe7, 20), // 130
    (0xfffe8, 20), // 131
    (0x3fffd3, 22), // 132
    (0x3fffd4, 22), // 133
    (0x3fffd5, 22), // 134
    (0x7fffd9, 23), // 135
    (0x3fffd6, 22), // 136
    (0x7fffda, 23), // 137
    (0x7fffdb, 23), // 138
    (0x7fffdc, 23), // 139
    (0x7fffdd, 23), // 140
    (0x7fffde, 23), // 141
    (0xffffeb, 24), // 142
    (0x7fffdf, 23), // 143
    (0xffffec, 24), // 144
    (0xffffed, 24), // 145
    (0x3fffd7, 22), // 146
    (0x7fffe0, 23), // 147
    (0xffffee, 24), // 148
    (0x7fffe1, 23), // 149
    (0x7fffe2, 23), // 150
    (0x7fffe3, 23), // 151
    (0x7fffe4, 23), // 152
    (0x1fffdc, 21), // 153
    (0x3fffd8, 22), // 154
    (0x7fffe5, 23), // 155
    (0x3fffd9, 22), // 156
    (0x7fffe6, 23), // 157
    (0x7fffe7, 23), // 158
    (0xffffef, 24), // 159
    (0x3fffda, 22), // 160
    (0x1fffdd, 21), // 161
    (0xfffe9, 20), // 162
    (0x3fffdb, 22), // 163
    (0x3fffdc, 22), // 164
    (0x7fffe8, 23), // 165
    (0x7fffe9, 23), // 166
    (0x1fffde, 21), // 167
    (0x7fffea, 23), // 168
    (0x3fffdd, 22), // 169
    (0x3fffde, 22), // 170
    (0xfffff0, 24), // 171
    (0x1fffdf, 21), // 172
    (0x3fffdf, 22), // 173
    (0x7fffeb, 23), // 174
    (0x7fffec, 23), // 175
    (0x1fffe0, 21), // 176
    (0x1fffe1, 21), // 177
    (0x3fffe0, 22), // 178
    (0x1fffe2, 21), // 179
    (0x7fffed, 23), // 180
    (0x3fffe1, 22), // 181
    (0x7fffee, 23), // 182
    (0x7fffef, 23), // 183
    (0xfffea, 20), // 184
    (0x3fffe2, 22), // 185
    (0x3fffe3, 22), // 186
    (0x3fffe4, 22), // 187
    (0x7ffff0, 23), // 188
    (0x3fffe5, 22), // 189
    (0x3fffe6, 22), // 190
    (0x7ffff1, 23), // 191
    (0x3ffffe0, 26), // 192
    (0x3ffffe1, 26), // 193
    (0xfffeb, 20), // 194
    (0x7fff1, 19), // 195
    (0x3fffe7, 22), // 196
    (0x7ffff2, 23), // 197
    (0x3fffe8, 22), // 198
    (0x1ffffec, 25), // 199
    (0x3ffffe2, 26), // 200
    (0x3ffffe3, 26), // 201
    (0x3ffffe4, 26), // 202
    (0x7ffffde, 27), // 203
    (0x7ffffdf, 27), // 204
    (0x3ffffe5, 26), // 205
    (0xfffff1, 24), // 206
    (0x1ffffed, 25), // 207
    (0x7fff2, 19), // 208
    (0x1fffe3, 21), // 209
    (0x3ffffe6, 26), // 210
    (0x7ffffe0, 27), // 211
    (0x7ffffe1, 27), // 212
    (0x3ffffe7, 26), // 213
    (0x7ffffe2, 27), // 214
    (0xfffff2, 24), // 215
    (0x1fffe4, 21), // 216
    (0x1fffe5, 21), // 217
    (0x3ffffe8, 26), // 218
    (0x3ffffe9, 26), // 219
    (0xffffffd, 28), // 220
    (0x7ffffe3, 27), // 221
    (0x7ffffe4, 27), // 222
    (0x7ffffe5, 27), // 223
    (0xfffec, 20), // 224
    (0xfffff3, 24), // 225
    (0xfffed, 20), // 226
    (0x1fffe6, 21), // 227
    (0x3fffe9, 22), // 228
    (0x1fffe7, 21), // 229
    (0x1fffe8, 21), // 230
    (0x7ffff3, 23), // 231
    (0x3fffea, 22), // 232
    (0x3fffeb, 22), // 233
    (0x1ffffee, 25), // 234
    (0x1ffffef, 25), // 235
    (0xfffff4, 24), // 236
    (0xfffff5, 24), // 237
    (0x3ffffea, 26), // 238
    (0x7ffff4, 23), // 239
    (0x3ffffeb, 26), // 240
    (0x7ffffe6, 27), // 241
    (0x3ffffec, 26), // 242
    (0x3ffffed, 26), // 243
    (0x7ffffe7, 27), // 244
    (0x7ffffe8, 27), // 245
    (0x7ffffe9, 27), // 246
    (0x7ffffea, 27), // 247
    (0x7ffffeb, 27), // 248
    (0xffffffe, 28), // 249
    (0x7ffffec, 27), // 250
    (0x7ffffed, 27), // 251
    (0x7ffffee, 27), // 252
    (0x7ffffef, 27), // 253
    (0x7fffff0, 27), // 254
    (0x3ffffee, 26), // 255
    (0x3fffffff, 30), // EOS
];

/// The length of `src` Huffman-coded, in bytes (QPACK codes a string when
/// that is shorter; HPACK's encoder writes raw, so its tests only).
#[cfg_attr(not(feature = "http3"), allow(dead_code))]
pub(crate) fn encoded_len(src: &[u8]) -> usize {
    let bits: usize = src
        .iter()
        .map(|&b| usize::from(CODES[usize::from(b)].1))
        .sum();
    bits.div_ceil(8)
}

/// Appends `src` Huffman-coded (QPACK's encoder; HPACK's tests).
#[cfg_attr(not(feature = "http3"), allow(dead_code))]
pub(crate) fn encode(src: &[u8], dst: &mut impl bytes::BufMut) {
    let mut acc: u64 = 0;
    let mut bits: u32 = 0;
    for &byte in src {
        let (code, len) = CODES[usize::from(byte)];
        acc = (acc << len) | u64::from(code);
        bits += u32::from(len);
        while bits >= 8 {
            bits -= 8;
            dst.put_u8((acc >> bits) as u8);
        }
        acc &= (1 << bits) - 1;
    }
    if bits > 0 {
        // Pad with the most significant bits of EOS: ones.
        dst.put_u8(((acc << (8 - bits)) as u8) | (0xff >> bits));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(src: &[u8]) -> Result<Vec<u8>, DecodeError> {
        let mut dst = Vec::new();
        decode(src, &mut dst).map(|()| dst)
    }

    fn encoded(src: &[u8]) -> Vec<u8> {
        let mut dst = Vec::new();
        encode(src, &mut dst);
        dst
    }

    /// The strings of RFC 7541 C.4 and C.6, coded as there.
    #[test]
    fn rfc_examples() {
        let cases: [(&[u8], &[u8]); 6] = [
            (
                b"www.example.com",
                &[
                    0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
                ],
            ),
            (b"no-cache", &[0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf]),
            (
                b"custom-key",
                &[0x25, 0xa8, 0x49, 0xe9, 0x5b, 0xa9, 0x7d, 0x7f],
            ),
            (
                b"custom-value",
                &[0x25, 0xa8, 0x49, 0xe9, 0x5b, 0xb8, 0xe8, 0xb4, 0xbf],
            ),
            (b"302", &[0x64, 0x02]),
            (
                b"Mon, 21 Oct 2013 20:13:21 GMT",
                &[
                    0xd0, 0x7a, 0xbe, 0x94, 0x10, 0x54, 0xd4, 0x44, 0xa8, 0x20, 0x05, 0x95, 0x04,
                    0x0b, 0x81, 0x66, 0xe0, 0x82, 0xa6, 0x2d, 0x1b, 0xff,
                ],
            ),
        ];
        for (plain, coded) in cases {
            assert_eq!(decoded(coded).as_deref(), Ok(plain));
            assert_eq!(encoded(plain), coded);
        }
    }

    #[test]
    fn every_byte_value() {
        // Each byte alone (exercising every code and padding length), then
        // all in a row, and in reverse.
        for byte in 0..=u8::MAX {
            assert_eq!(decoded(&encoded(&[byte])), Ok(vec![byte]), "byte {byte}");
            assert_eq!(
                decoded(&encoded(&[byte, b'a', byte])),
                Ok(vec![byte, b'a', byte])
            );
        }
        let all: Vec<u8> = (0..=u8::MAX).collect();
        assert_eq!(decoded(&encoded(&all)), Ok(all.clone()));
        let reversed: Vec<u8> = all.iter().rev().copied().collect();
        assert_eq!(decoded(&encoded(&reversed)), Ok(reversed));
    }

    #[test]
    fn empty_and_most_expanding() {
        assert_eq!(decoded(&[]), Ok(vec![]));
        // '0' has a 5-bit code: 8 symbols per 5 bytes, the most there can be.
        for len in 0..50 {
            let zeros = vec![b'0'; len];
            let coded = encoded(&zeros);
            let mut dst = Vec::new();
            decode(&coded, &mut dst).unwrap();
            assert_eq!(dst, zeros);
            assert!(dst.capacity() <= coded.len() * 8 / 5 + 8);
        }
    }

    #[test]
    fn rejects_bad_padding() {
        // '0' (00000) then three ones.
        assert_eq!(decoded(&[0x07]), Ok(b"0".to_vec()));
        // Padding that is not all ones.
        assert!(decoded(&[0x06]).is_err());
        assert!(decoded(&[0x00]).is_err());
        // A whole byte of padding: 8 bits.
        assert!(decoded(&[0x07, 0xff]).is_err());
        assert!(decoded(&[0xff]).is_err());
        // 15 bits of ones after 'a' (00011): still an EOS prefix, too long.
        assert!(decoded(&[0x1f, 0xff, 0xff]).is_err());
    }

    #[test]
    fn rejects_eos() {
        // EOS: 30 ones, then two bits of padding.
        assert!(decoded(&[0xff, 0xff, 0xff, 0xff]).is_err());
        // EOS after a symbol: '0' (00000), then EOS, then padding.
        let mut bits: u64 = 0x3fff_ffff;
        bits <<= 29; // 5 + 30 + 29 = 64 bits
        bits |= (1 << 29) - 1;
        assert!(decoded(&bits.to_be_bytes()).is_err());
    }

    #[test]
    fn never_panics_on_arbitrary_input() {
        let mut next = crate::test_support::xorshift(0x2545_f491_4f6c_dd1d);
        for len in 0..64 {
            for _ in 0..64 {
                let src: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                if let Ok(plain) = decoded(&src) {
                    // Whatever decodes re-encodes to the same bytes.
                    assert_eq!(encoded(&plain), src);
                }
            }
        }
    }
}
