//! Numbers as people read them: thousands separators.
//!
//! Why a leaf of its own: the report, the progress line, the verdict, the limits check, the
//! HTML report and `courier compare` all print numbers this way; kept here, below all of them,
//! none of them imports another to borrow it.

/// Inserts `,` every three digits of the integer part of a formatted number.
pub fn group_thousands(number: &str) -> String {
    let (sign, unsigned) = match number.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", number),
    };
    let (int, frac) = match unsigned.split_once('.') {
        Some((int, frac)) => (int, Some(frac)),
        None => (unsigned, None),
    };
    let mut grouped = String::with_capacity(number.len() + int.len() / 3);
    grouped.push_str(sign);
    for (i, digit) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    if let Some(frac) = frac {
        grouped.push('.');
        grouped.push_str(frac);
    }
    grouped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(group_thousands("0"), "0");
        assert_eq!(group_thousands("999"), "999");
        assert_eq!(group_thousands("1000"), "1,000");
        assert_eq!(group_thousands("1648740"), "1,648,740");
        assert_eq!(group_thousands("109959.61"), "109,959.61");
        assert_eq!(group_thousands("-1234.5"), "-1,234.5");
    }
}
