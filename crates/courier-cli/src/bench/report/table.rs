//! Text layout of the report's tables: aligned columns.
//!
//! Why apart from the rows: the layout knows nothing of what a row means, and `courier compare`
//! lays out its table with it too.

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
