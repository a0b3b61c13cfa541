//! Units: the canonical units metrics are stored in, and the unit strings tools print.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The canonical unit of a metric. Every parser converts to one of these, so two trials of
/// one metric are always comparable and reports can format them humanly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Storage or memory throughput.
    BytesPerSecond,
    /// Network throughput.
    BitsPerSecond,
    /// Durations and latencies.
    Seconds,
    /// Rates of operations, transactions, events, keys…
    OpsPerSecond,
    /// Sizes.
    Bytes,
    /// Shares such as CPU utilisation or packet loss, 0–100.
    Percent,
    /// Plain counts.
    Count,
}

impl Unit {
    /// The short symbol reports print after a number.
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::BytesPerSecond => "B/s",
            Unit::BitsPerSecond => "bit/s",
            Unit::Seconds => "s",
            Unit::OpsPerSecond => "op/s",
            Unit::Bytes => "B",
            Unit::Percent => "%",
            Unit::Count => "",
        }
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.symbol())
    }
}

/// Whether a metric of this (canonical) unit can never be negative: seconds, bytes and
/// their rates, operations per second, percentages. A plain count or a unitless score
/// may be a difference, and is not cut.
pub fn never_negative(unit: &str) -> bool {
    matches!(unit, "s" | "B" | "B/s" | "bit/s" | "op/s" | "%")
}

/// A unit string resolved: multiply a printed value by `factor` to get `unit`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UnitScale {
    pub unit: Unit,
    pub factor: f64,
}

impl UnitScale {
    pub fn to_canonical(self, value: f64) -> f64 {
        value * self.factor
    }
}

/// A unit string that [`parse_unit`] does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown unit '{0}'; expected e.g. B/s, kB/s, MB/s, MiB/s, KB/s (1024), bytes/sec, \
     bit/s, Mbit/s, Mbits/sec, 10^6bits/sec, ns, us, ms, s, ops/s, IOPS, B, KiB, MB, %, count"
)]
pub struct UnknownUnit(pub String);

/// What a quantity counts, before a division by time makes it a rate.
#[derive(Clone, Copy)]
enum Kind {
    Bytes,
    Bits,
    Ops,
}

const KI: f64 = 1024.0;

/// Resolves a unit string as tools print it.
///
/// Prefix conventions follow the tools rather than one standard, because the same letter
/// means different things in different outputs:
/// - SI spellings with `B` are decimal (`kB`, `MB`, `GB`, `TB`: GNU dd, fio);
/// - IEC spellings are binary (`KiB`, `MiB`, `GiB`, `TiB`: sysbench, fio, dd);
/// - a capital `K` (`KB`, `K`) is binary: SI has no capital K, and iozone and bonnie++,
///   the tools that print it, mean 1024;
/// - long spellings (`Kbytes`, `MBytes`, `GBytes`) are binary, as iperf and netperf print them;
/// - bits are always decimal (`Kbits`, `Mbit`, `Gbps`, netperf's `10^6bits`).
///
/// A rate is `quantity/time` (`MB/s`, `bytes/sec`, `keys/sec`, `ops/ms`) or one of the
/// rate words `bps`, `IOPS`, `tps`.
pub fn parse_unit(text: &str) -> Result<UnitScale, UnknownUnit> {
    let unknown = || UnknownUnit(text.to_owned());
    let s = text.trim();
    match s {
        "" | "1" | "#" | "count" | "counts" => return Ok(scale(Unit::Count, 1.0)),
        "%" | "percent" => return Ok(scale(Unit::Percent, 1.0)),
        "IOPS" | "iops" | "tps" => return Ok(scale(Unit::OpsPerSecond, 1.0)),
        _ => {}
    }
    if let Some(seconds) = time_factor(s) {
        return Ok(scale(Unit::Seconds, seconds));
    }
    if let Some(prefix) = s.strip_suffix("bps") {
        let factor = bit_prefix(prefix).ok_or_else(unknown)?;
        return Ok(scale(Unit::BitsPerSecond, factor));
    }
    match s.split_once('/') {
        Some((quantity_text, per)) => {
            let per_seconds = time_factor(per).ok_or_else(unknown)?;
            // "/s" alone is a rate of whatever is being counted.
            let (kind, factor) = if quantity_text.is_empty() {
                (Kind::Ops, 1.0)
            } else {
                quantity(quantity_text).ok_or_else(unknown)?
            };
            let unit = match kind {
                Kind::Bytes => Unit::BytesPerSecond,
                Kind::Bits => Unit::BitsPerSecond,
                Kind::Ops => Unit::OpsPerSecond,
            };
            Ok(scale(unit, factor / per_seconds))
        }
        None => match quantity(s) {
            Some((Kind::Bytes, factor)) => Ok(scale(Unit::Bytes, factor)),
            Some((Kind::Ops, factor)) => Ok(scale(Unit::Count, factor)),
            // A number of bits is a size too; store it in bytes so sizes share one unit.
            Some((Kind::Bits, factor)) => Ok(scale(Unit::Bytes, factor / 8.0)),
            None => Err(unknown()),
        },
    }
}

fn scale(unit: Unit, factor: f64) -> UnitScale {
    UnitScale { unit, factor }
}

/// Seconds per one of the given time unit.
fn time_factor(s: &str) -> Option<f64> {
    Some(match s {
        "ns" | "nsec" => 1e-9,
        "us" | "µs" | "μs" | "usec" => 1e-6,
        "ms" | "msec" => 1e-3,
        "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
        "min" | "mins" | "minute" | "minutes" => 60.0,
        "h" | "hr" | "hour" | "hours" => 3600.0,
        _ => return None,
    })
}

/// A quantity before `/time`: bytes, bits or counted things, with the prefix resolved.
fn quantity(q: &str) -> Option<(Kind, f64)> {
    if let Some(prefix) = q.strip_suffix("iB") {
        return Some((Kind::Bytes, binary_prefix(prefix)?));
    }
    for word in ["bytes", "Bytes", "byte", "Byte"] {
        if let Some(prefix) = q.strip_suffix(word) {
            return Some((Kind::Bytes, binary_prefix(prefix)?));
        }
    }
    for word in ["bits", "bit"] {
        if let Some(prefix) = q.strip_suffix(word) {
            return Some((Kind::Bits, bit_prefix(prefix)?));
        }
    }
    if let Some(prefix) = q.strip_suffix('B') {
        let factor = match prefix {
            "" => 1.0,
            "k" => 1e3,
            "K" => KI,
            "M" => 1e6,
            "G" => 1e9,
            "T" => 1e12,
            _ => return None,
        };
        return Some((Kind::Bytes, factor));
    }
    if let Some(factor) = binary_prefix(q).filter(|_| !q.is_empty()) {
        // bonnie++ prints "K/sec".
        return Some((Kind::Bytes, factor));
    }
    let (prefix, word) = match q.strip_prefix(['k', 'K', 'M', 'G']) {
        Some(rest) if is_counted_word(rest) => (&q[..1], rest),
        _ => ("", q),
    };
    if !is_counted_word(word) {
        return None;
    }
    Some((Kind::Ops, bit_prefix(prefix)?))
}

/// Things tools count per second; anything else on the left of "/s" is a typo to report.
fn is_counted_word(word: &str) -> bool {
    matches!(
        word.to_ascii_lowercase().as_str(),
        "op" | "ops"
            | "operation"
            | "operations"
            | "io"
            | "ios"
            | "event"
            | "events"
            | "trans"
            | "transaction"
            | "transactions"
            | "req"
            | "request"
            | "requests"
            | "query"
            | "queries"
            | "key"
            | "keys"
            | "node"
            | "nodes"
            | "file"
            | "files"
            | "packet"
            | "packets"
            | "message"
            | "messages"
            | "call"
            | "calls"
            | "seek"
            | "seeks"
    )
}

fn binary_prefix(prefix: &str) -> Option<f64> {
    Some(match prefix {
        "" => 1.0,
        "k" | "K" => KI,
        "M" => KI * KI,
        "G" => KI * KI * KI,
        "T" => KI * KI * KI * KI,
        _ => return None,
    })
}

/// Decimal prefixes, plus netperf's explicit `10^N`.
fn bit_prefix(prefix: &str) -> Option<f64> {
    if let Some(exponent) = prefix.strip_prefix("10^") {
        let exponent: i32 = exponent.parse().ok().filter(|e| (0..=18).contains(e))?;
        return Some(10f64.powi(exponent));
    }
    Some(match prefix {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_table() {
        use Unit::*;
        let table: &[(&str, Unit, f64)] = &[
            // GNU dd, fio: SI
            ("kB/s", BytesPerSecond, 1e3),
            ("MB/s", BytesPerSecond, 1e6),
            ("GB/s", BytesPerSecond, 1e9),
            ("B/s", BytesPerSecond, 1.0),
            // IEC
            ("KiB/s", BytesPerSecond, 1024.0),
            ("MiB/s", BytesPerSecond, 1048576.0),
            ("MiB/sec", BytesPerSecond, 1048576.0),
            ("GiB/s", BytesPerSecond, 1073741824.0),
            // iozone, bonnie++: capital K is 1024
            ("KB/sec", BytesPerSecond, 1024.0),
            ("K/sec", BytesPerSecond, 1024.0),
            ("Kbytes/sec", BytesPerSecond, 1024.0),
            // BSD dd
            ("bytes/sec", BytesPerSecond, 1.0),
            // iperf: bytes binary, bits decimal
            ("MBytes", Bytes, 1048576.0),
            ("Kbits/sec", BitsPerSecond, 1e3),
            ("Mbits/sec", BitsPerSecond, 1e6),
            ("Gbits/sec", BitsPerSecond, 1e9),
            ("Mbit/s", BitsPerSecond, 1e6),
            ("bit/s", BitsPerSecond, 1.0),
            ("Mbps", BitsPerSecond, 1e6),
            ("bps", BitsPerSecond, 1.0),
            // netperf
            ("10^6bits/sec", BitsPerSecond, 1e6),
            ("10^9bits/s", BitsPerSecond, 1e9),
            // time
            ("ns", Seconds, 1e-9),
            ("us", Seconds, 1e-6),
            ("µs", Seconds, 1e-6),
            ("ms", Seconds, 1e-3),
            ("s", Seconds, 1.0),
            ("sec", Seconds, 1.0),
            ("min", Seconds, 60.0),
            // rates of things
            ("ops/s", OpsPerSecond, 1.0),
            ("/s", OpsPerSecond, 1.0),
            ("/sec", OpsPerSecond, 1.0),
            ("IOPS", OpsPerSecond, 1.0),
            ("keys/sec", OpsPerSecond, 1.0),
            ("Mkeys/sec", OpsPerSecond, 1e6),
            ("kops/s", OpsPerSecond, 1e3),
            ("transactions/s", OpsPerSecond, 1.0),
            ("ops/ms", OpsPerSecond, 1e3),
            // sizes and counts
            ("B", Bytes, 1.0),
            ("bytes", Bytes, 1.0),
            ("kB", Bytes, 1e3),
            ("KB", Bytes, 1024.0),
            ("KiB", Bytes, 1024.0),
            ("MB", Bytes, 1e6),
            ("GiB", Bytes, 1073741824.0),
            ("Mbit", Bytes, 125000.0),
            ("%", Percent, 1.0),
            ("", Count, 1.0),
            ("count", Count, 1.0),
        ];
        for &(text, unit, factor) in table {
            let got = parse_unit(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(got.unit, unit, "{text}");
            assert!(
                (got.factor - factor).abs() <= factor * 1e-12,
                "{text}: factor {} != {factor}",
                got.factor
            );
        }
    }

    #[test]
    fn unknown_units_are_errors_that_name_the_unit() {
        for text in ["furlongs", "MB/fortnight", "Mbs/s", "xB", "10^99bits/s", "kb/s"] {
            let error = parse_unit(text).expect_err(text);
            assert!(error.to_string().contains(&format!("'{text}'")), "{error}");
        }
    }
}
