//! Numbers for people: canonical units scaled to MB/s, GiB, ms, µs, ops/s; percentages;
//! p-values; and Markdown tables padded so they read as tables in a pager too.
//!
//! A ratio reads as a change by one function everywhere — the report's tables, the
//! verdict sentences of summary.json, the terminal: [`ratio_change`], defined in
//! the statistics core (which imports no later stage) and used from there.
//!
//! [`ratio_change`]: stats::notation::ratio_change

pub(crate) use vocab::display::{DIGITS, DisplayUnit, scale, significant};

/// A percentage number: one decimal, two below 1 %, so small values keep a digit.
pub(crate) fn percent(value: f64) -> String {
    if !value.is_finite() {
        return significant(value, DIGITS);
    }
    if value.abs() < 1.0 { format!("{value:.2} %") } else { format!("{value:.1} %") }
}

/// A percentage with its sign: `+2.5 %`, `-0.31 %`.
pub(crate) fn signed_percent(value: f64) -> String {
    let text = percent(value);
    if text.starts_with('-') { text } else { format!("+{text}") }
}

/// A p-value: three significant digits, or `< 0.001`.
pub(crate) fn p_value(p: f64) -> String {
    if p < 0.001 { "< 0.001".to_owned() } else { significant(p, 3) }
}

/// `p = 0.119` or `p < 0.001`, for sentences.
pub(crate) fn p_clause(name: &str, p: f64) -> String {
    let value = p_value(p);
    if value.starts_with('<') { format!("{name} {value}") } else { format!("{name} = {value}") }
}

/// A confidence level as people write it: 0.95 → `95 %`, 0.975 → `97.5 %` (the sentences'
/// own, so that a header and a sentence never print one level two ways).
pub(crate) fn confidence(level: f64) -> String {
    stats::notation::confidence_level(level)
}

/// Escapes text for a Markdown table cell: pipes, and line breaks as spaces.
pub(crate) fn cell_text(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// The widest a table's column is padded to.
const MAX_WIDTH: usize = 1000;

/// A Markdown table whose columns are padded to equal width, so that it reads as a table
/// in a terminal pager as well as on GitHub. Columns from `numbers_from` on hold numbers
/// and are right-aligned.
pub(crate) fn markdown_table(header: &[String], rows: &[Vec<String>], numbers_from: usize) -> String {
    let width = |i: usize| {
        rows.iter()
            .map(|r| r.get(i).map_or(0, |c| c.chars().count()))
            .chain([header[i].chars().count(), 3])
            .max()
            .unwrap_or(3)
    };
    // a column is aligned up to MAX_WIDTH characters; a longer cell just runs on (the
    // Markdown is the same, and `format!`'s width would panic past 65 535)
    let widths: Vec<usize> = (0..header.len()).map(|i| width(i).min(MAX_WIDTH)).collect();
    let line = |cells: &[String]| {
        let padded: Vec<String> = widths
            .iter()
            .enumerate()
            .map(|(i, &w)| {
                let text = cells.get(i).map_or("", String::as_str);
                let pad = " ".repeat(w.saturating_sub(text.chars().count()));
                if i < numbers_from { format!("{text}{pad}") } else { format!("{pad}{text}") }
            })
            .collect();
        format!("| {} |", padded.join(" | "))
    };
    let rule: Vec<String> = widths
        .iter()
        .enumerate()
        .map(|(i, &w)| if i < numbers_from { "-".repeat(w) } else { format!("{}:", "-".repeat(w - 1)) })
        .collect();
    let mut out = vec![line(header), format!("| {} |", rule.join(" | "))];
    out.extend(rows.iter().map(|r| line(r)));
    out.join("\n")
}

/// The mark of a value that is not there.
pub(crate) fn dash() -> String {
    "—".to_owned()
}

/// `1 trial`, `2 trials`.
pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;
    use stats::notation::{change_and_interval, ratio_change, ratio_interval};

    #[test]
    fn rates_use_decimal_prefixes_and_sizes_binary_ones() {
        assert_eq!(scale("B/s", 51_466_240.0).with_unit(51_466_240.0), "51.47 MB/s");
        assert_eq!(
            scale("B", 8.0 * 1024.0 * 1024.0 * 1024.0).with_unit(8.0 * 1024.0 * 1024.0 * 1024.0),
            "8.000 GiB"
        );
        assert_eq!(scale("bit/s", 9.41e8).with_unit(9.41e8), "941.0 Mbit/s");
        assert_eq!(scale("op/s", 10_617_133.0).with_unit(10_617_133.0), "10.62 M ops/s");
    }

    #[test]
    fn times_go_down_to_nanoseconds() {
        assert_eq!(scale("s", 16.835).with_unit(16.835), "16.84 s");
        assert_eq!(scale("s", 0.0042).with_unit(0.0042), "4.200 ms");
        assert_eq!(scale("s", 3.1e-6).with_unit(3.1e-6), "3.100 µs");
        assert_eq!(scale("s", 2e-10).with_unit(2e-10), "0.2000 ns");
    }

    #[test]
    fn unknown_units_and_counts_are_printed_as_they_are() {
        assert_eq!(scale("%", 93.5).with_unit(93.5), "93.50 %");
        assert_eq!(scale("", 1234.0).with_unit(1234.0), "1234");
        assert_eq!(scale("widgets", 2.5).with_unit(2.5), "2.500 widgets");
    }

    #[test]
    fn the_margin_takes_the_mean_decimal_places() {
        assert_eq!(scale("s", 16.835).plus_minus(16.835, 0.58005), "16.84 ± 0.58 s");
        assert_eq!(scale("B/s", 5.1e7).plus_minus(51_466_240.0, 331_000.0), "51.47 ± 0.33 MB/s");
        // A margin smaller than the mean's last digit keeps two significant digits.
        assert_eq!(scale("s", 100.0).plus_minus(100.0, 0.0012), "100.0000 ± 0.0012 s");
    }

    #[test]
    fn percentages_and_p_values() {
        assert_eq!(percent(3.4455), "3.4 %");
        assert_eq!(percent(0.314), "0.31 %");
        assert_eq!(signed_percent(2.45), "+2.5 %");
        assert_eq!(signed_percent(-0.9), "-0.90 %");
        assert_eq!(p_value(0.11939), "0.119");
        assert_eq!(p_value(5.6e-12), "< 0.001");
        assert_eq!(p_clause("p", 0.11939), "p = 0.119");
        assert_eq!(p_clause("Holm", 5.6e-12), "Holm < 0.001");
        assert_eq!((confidence(0.95), confidence(0.975)), ("95 %".to_owned(), "97.5 %".to_owned()));
        assert_eq!(significant(-0.00001, 2), "-0.000010");
        assert_eq!(significant(-0.0, 4), "0");
    }

    #[test]
    fn ratios_past_twice_read_as_multiples_and_below_half_as_divisions() {
        let shown =
            [0.0046, 0.3, 0.5, 0.5001, 0.801, 0.99, 1.0, 1.0042, 1.25, 1.999, 2.0, 2.5, 21.64, 217.4, 2170.4];
        assert_eq!(
            shown.map(ratio_change),
            [
                "÷217", "÷3.33", "÷2", "-50.0 %", "-19.9 %", "-1.0 %", "+0.00 %", "+0.42 %", "+25.0 %",
                "+99.9 %", "×2", "×2.5", "×21.6", "×217", "×2170"
            ]
        );
        assert_eq!(ratio_change(f64::INFINITY), "×∞");
        assert_eq!(ratio_change(f64::NAN), "—");
        // a ratio of negative means has no multiple: the percentage
        assert_eq!(ratio_change(-0.5), "-150.0 %");
        // a change and its interval in one notation, the interval's (a report once mixed
        // them: "÷2.2 [÷5.09, -16.7 %]")
        assert_eq!(ratio_interval((0.6, 82.8)), "[×0.6, ×82.8]");
        let read = |ratio, bounds| {
            let (change, interval) = change_and_interval(ratio, bounds);
            format!("{change} {interval}")
        };
        assert_eq!(read(0.4545, (0.1965, 0.833)), "÷2.2 [÷5.09, ÷1.2]");
        assert_eq!(read(0.3, (0.2, 0.45)), "÷3.33 [÷5, ÷2.22]");
        assert_eq!(read(2.5, (2.1, 3.0)), "×2.5 [×2.1, ×3]");
        assert_eq!(read(1.6, (0.8, 2.4)), "×1.6 [×0.8, ×2.4]");
        assert_eq!(read(0.8, (0.4, 1.5)), "×0.8 [×0.4, ×1.5]");
        assert_eq!(read(2.5, (1.6, f64::INFINITY)), "×2.5 [×1.6, ×∞]");
        assert_eq!(read(0.9, (0.8, 1.1)), "-10.0 % [-20.0 %, +10.0 %]");
        // negative means: percentages
        assert_eq!(read(-0.5, (-1.0, 0.5)), "-150.0 % [-200.0 %, -50.0 %]");
    }

    #[test]
    fn tables_are_padded_and_escaped() {
        let header = vec!["cell".to_owned(), "n".to_owned()];
        let rows = vec![vec![cell_text("a|b"), "12".to_owned()], vec!["c".to_owned(), "3".to_owned()]];
        let numbers = "| cell |   n |\n| ---- | --: |\n| a\\|b |  12 |\n| c    |   3 |";
        assert_eq!(markdown_table(&header, &rows, 1), numbers);
        let text = "| cell | n   |\n| ---- | --- |\n| a\\|b | 12  |\n| c    | 3   |";
        assert_eq!(markdown_table(&header, &rows, 2), text);
    }
}
