//! Numbers with their units, for people: a canonical value scaled to MB/s, GiB, ms, µs,
//! ops/s with four significant digits. The report's tables and the sentences of
//! summary.json (written by the analysis, which imports no later stage) share it.

/// A display unit: divide a canonical value by `factor` and print `symbol` after it.
#[derive(Debug, Clone, PartialEq)]
pub struct DisplayUnit {
    pub factor: f64,
    pub symbol: String,
}

/// Significant digits of the numbers in tables and sentences.
pub const DIGITS: i32 = 4;

/// The display unit for values of `unit` around `typical`: decimal prefixes for rates
/// (as dd and bonnie++ print them), binary ones for sizes, ms/µs/ns for times.
pub fn scale(unit: &str, typical: f64) -> DisplayUnit {
    let (steps, base): (&[(f64, &str)], f64) = match unit {
        "B/s" => (&[(1.0, "B/s"), (1e3, "kB/s"), (1e6, "MB/s"), (1e9, "GB/s"), (1e12, "TB/s")], 1.0),
        "bit/s" => {
            (&[(1.0, "bit/s"), (1e3, "kbit/s"), (1e6, "Mbit/s"), (1e9, "Gbit/s"), (1e12, "Tbit/s")], 1.0)
        }
        "op/s" => (&[(1.0, "ops/s"), (1e3, "k ops/s"), (1e6, "M ops/s"), (1e9, "G ops/s")], 1.0),
        "B" => {
            const K: f64 = 1024.0;
            (&[(1.0, "B"), (K, "KiB"), (K * K, "MiB"), (K * K * K, "GiB"), (K * K * K * K, "TiB")], 1.0)
        }
        "s" => (&[(1e-9, "ns"), (1e-6, "µs"), (1e-3, "ms"), (1.0, "s")], 1.0),
        other => return DisplayUnit { factor: 1.0, symbol: other.to_owned() },
    };
    let magnitude = typical.abs() * base;
    let chosen = steps.iter().rev().find(|(f, _)| magnitude >= *f).unwrap_or(&steps[0]);
    DisplayUnit { factor: chosen.0, symbol: chosen.1.to_owned() }
}

impl DisplayUnit {
    /// The value in this unit, with [`DIGITS`] significant digits, without the symbol.
    pub fn number(&self, value: f64) -> String {
        significant(value / self.factor, DIGITS)
    }

    /// The value with its symbol: `48.93 MB/s`.
    pub fn with_unit(&self, value: f64) -> String {
        join(self.number(value), &self.symbol)
    }

    /// `16.43 ± 0.19 s`: the margin printed to the same decimal place as the mean.
    pub fn plus_minus(&self, mean: f64, moe: f64) -> String {
        let decimals = decimals_for(mean / self.factor, DIGITS).max(decimals_for(moe / self.factor, 2));
        let text = format!("{:.*} ± {:.*}", decimals, mean / self.factor, decimals, moe / self.factor);
        join(text, &self.symbol)
    }
}

fn join(number: String, symbol: &str) -> String {
    if symbol.is_empty() { number } else { format!("{number} {symbol}") }
}

/// Decimals that give `digits` significant digits for `value` (0 for large values).
fn decimals_for(value: f64, digits: i32) -> usize {
    if value == 0.0 || !value.is_finite() {
        return 0;
    }
    let exponent = value.abs().log10().floor() as i32;
    (digits - 1 - exponent).clamp(0, 9) as usize
}

/// `value` with `digits` significant digits, in plain notation: 16.84, 0.5801, 1234.
pub fn significant(value: f64, digits: i32) -> String {
    if !value.is_finite() {
        return if value.is_nan() { "—".to_owned() } else { "∞".to_owned() };
    }
    let text = format!("{:.*}", decimals_for(value, digits), value);
    // Rounding may leave "-0": a sign on nothing.
    if text.trim_start_matches('-').chars().all(|c| c == '0' || c == '.') {
        text.trim_start_matches('-').to_owned()
    } else {
        text
    }
}

/// Seconds as `1.2 s`, `3 min 20 s`, `1 h 05 min`: a time spent, as a person reads it.
pub fn duration(seconds: f64) -> String {
    if seconds < 60.0 {
        format!("{seconds:.1} s")
    } else if seconds < 3600.0 {
        format!("{} min {:02} s", (seconds / 60.0) as u64, (seconds % 60.0) as u64)
    } else {
        format!("{} h {:02} min", (seconds / 3600.0) as u64, ((seconds % 3600.0) / 60.0) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::duration;

    #[test]
    fn a_duration_reads_in_the_unit_a_person_would_say() {
        assert_eq!(duration(4.25), "4.2 s");
        assert_eq!(duration(200.0), "3 min 20 s");
        assert_eq!(duration(3600.0 + 5.0 * 60.0 + 59.0), "1 h 05 min");
    }
}
