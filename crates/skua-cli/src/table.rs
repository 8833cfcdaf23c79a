//! Text tables in the layouts of HTCondor's tools, and the durations they
//! show.
//!
//! [`Table`]: headings left-justified in their column, cells left- or
//! right-justified, columns separated by one space (unless a column says
//! otherwise), a column as wide as its widest cell (or its minimum width),
//! trailing blanks trimmed, a blank line after the headings.
//! [`render_totals`]: the totals block that follows some of them.

/// How a column's cells are justified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Align {
    Left,
    Right,
}

/// One column of a [`Table`].
#[derive(Clone, Debug)]
pub(crate) struct Column {
    pub(crate) head: &'static str,
    /// Minimum width (the column grows to fit its heading and cells).
    pub(crate) min: usize,
    pub(crate) align: Align,
    /// Whether a space separates this column from the previous one.
    pub(crate) sep: bool,
}

/// A column separated from the previous one by a space.
pub(crate) const fn col(head: &'static str, min: usize, align: Align) -> Column {
    Column {
        head,
        min,
        align,
        sep: true,
    }
}

/// A column that follows the previous one without a space (its heading
/// carries its own leading blanks).
pub(crate) const fn col_joined(head: &'static str, min: usize, align: Align) -> Column {
    Column {
        head,
        min,
        align,
        sep: false,
    }
}

/// A table being built: its columns, then one row at a time.
pub(crate) struct Table {
    cols: Vec<Column>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table with these columns.
    pub(crate) fn new(cols: impl Into<Vec<Column>>) -> Table {
        Table {
            cols: cols.into(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (one cell per column).
    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Headings, a blank line, then one line per row, appended to `out`.
    pub(crate) fn render(&self, out: &mut String) {
        let widths: Vec<usize> = self
            .cols
            .iter()
            .enumerate()
            .map(|(i, c)| {
                self.rows
                    .iter()
                    .map(|r| r.get(i).map_or(0, |cell| width(cell)))
                    .chain([c.min, width(c.head)])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut line = String::new();
        for (i, c) in self.cols.iter().enumerate() {
            if i > 0 && c.sep {
                line.push(' ');
            }
            pad(c.head, widths[i], Align::Left, &mut line);
        }
        end_line(&mut line, out);
        out.push('\n');
        for row in &self.rows {
            for (i, c) in self.cols.iter().enumerate() {
                if i > 0 && c.sep {
                    line.push(' ');
                }
                pad(
                    row.get(i).map_or("", String::as_str),
                    widths[i],
                    c.align,
                    &mut line,
                );
            }
            end_line(&mut line, out);
        }
    }

    /// The rendered table.
    pub(crate) fn to_text(&self) -> String {
        let mut out = String::new();
        self.render(&mut out);
        out
    }
}

/// The width of a cell, in characters.
pub(crate) fn width(s: &str) -> usize {
    s.chars().count()
}

fn pad(s: &str, w: usize, align: Align, out: &mut String) {
    let fill = w.saturating_sub(width(s));
    if align == Align::Right {
        out.extend(std::iter::repeat_n(' ', fill));
    }
    out.push_str(s);
    if align == Align::Left {
        out.extend(std::iter::repeat_n(' ', fill));
    }
}

fn end_line(line: &mut String, out: &mut String) {
    out.push_str(line.trim_end());
    out.push('\n');
    line.clear();
}

/// A totals table: headings right-justified over `(heading, width)`
/// columns after a key column of `key_width`, a blank line, one line per
/// key (`None`: the key is shown without numbers), a blank line, the
/// `Total` line.
pub(crate) fn render_totals(
    key_width: usize,
    cols: &[(&str, usize)],
    rows: &[(String, Option<Vec<u64>>)],
    total: &[u64],
    out: &mut String,
) {
    let mut line = String::new();
    line.extend(std::iter::repeat_n(' ', key_width));
    for (i, (head, w)) in cols.iter().enumerate() {
        if i > 0 {
            line.push(' ');
        }
        pad(head, *w, Align::Right, &mut line);
    }
    end_line(&mut line, out);
    out.push('\n');
    let numbers = |key: &str, values: Option<&[u64]>, line: &mut String| {
        pad(key, key_width, Align::Right, line);
        for (i, ((_, w), v)) in cols.iter().zip(values.unwrap_or(&[])).enumerate() {
            if i > 0 {
                line.push(' ');
            }
            pad(&v.to_string(), *w, Align::Right, line);
        }
    };
    for (key, values) in rows {
        numbers(key, values.as_deref(), &mut line);
        end_line(&mut line, out);
    }
    if !rows.is_empty() {
        out.push('\n');
    }
    numbers("Total", Some(total), &mut line);
    end_line(&mut line, out);
}

/// `d+hh:mm:ss` (negative durations show as zero), as `condor_status` and
/// `condor_q` print times.
pub(crate) fn duration(secs: i64) -> String {
    let s = secs.max(0);
    format!(
        "{}+{:02}:{:02}:{:02}",
        s / 86_400,
        s % 86_400 / 3600,
        s % 3600 / 60,
        s % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_fit_their_widest_cell_and_trailing_blanks_go() {
        let mut t = Table::new([
            col("A", 0, Align::Left),
            col("Num", 5, Align::Right),
            col_joined("  Tail", 0, Align::Right),
        ]);
        t.row(vec!["long-name".into(), "7".into(), "x".into()]);
        t.row(vec!["b".into(), "12345678".into(), String::new()]);
        assert_eq!(
            t.to_text(),
            "A         Num       Tail\n\nlong-name        7     x\nb         12345678\n"
        );
    }

    #[test]
    fn totals_block() {
        let mut out = String::new();
        render_totals(
            6,
            &[("Total", 5), ("Idle", 4)],
            &[("a/b".into(), Some(vec![3, 1])), ("c".into(), None)],
            &[3, 1],
            &mut out,
        );
        assert_eq!(
            out,
            "      Total Idle\n\n   a/b    3    1\n     c\n\n Total    3    1\n"
        );
    }

    #[test]
    fn durations() {
        assert_eq!(duration(0), "0+00:00:00");
        assert_eq!(duration(59), "0+00:00:59");
        assert_eq!(duration(86_399), "0+23:59:59");
        assert_eq!(duration(90_061), "1+01:01:01");
        assert_eq!(duration(86_400 * 123 + 1), "123+00:00:01");
        assert_eq!(duration(-5), "0+00:00:00");
    }
}
