//! Text layout of the report's tables: aligned columns and thousands separators.
//!
//! Why apart from the rows: the layout knows nothing of what a row means, and more than the
//! bench table use it (`courier compare`, the progress line, the HTML report's numbers).

use std::fmt::Write as _;

/// Lays out rows of cells: the first column left-aligned, the others right-aligned, with the
/// header row on top.
pub fn table(header: &[String], rows: &[Vec<String>]) -> String {
    let columns = header.len();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(columns) {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[String]| {
        let mut text = String::new();
        for (i, width) in widths.iter().enumerate() {
            let cell = cells.get(i).map_or("", String::as_str);
            if i == 0 {
                let _ = write!(text, "{cell:<width$}");
            } else {
                let _ = write!(text, "  {cell:>width$}");
            }
        }
        let _ = writeln!(out, "{}", text.trim_end());
    };
    line(header);
    for row in rows {
        line(row);
    }
    out
}

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
