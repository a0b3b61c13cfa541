//! netperf 2.x: TCP_STREAM (and MAERTS) throughput and TCP_RR / TCP_CRR transaction rates.

use super::{Better, ParseError, Parsed, Parser, Sample, Unit, nothing_found, number, parse_unit};

pub(super) struct Netperf;

#[derive(Clone, Copy, PartialEq)]
enum Test {
    Stream,
    RequestResponse,
}

/// netperf's own words when `-i`/`-I` could not reach the confidence asked for: "Desired
/// confidence was not achieved within the specified iterations" (netperf 2.x), or "did not
/// achieve the desired confidence" (as others quote it).
fn not_confident(text: &str) -> bool {
    let lower = text.to_lowercase();
    lower.contains("desired confidence was not achieved")
        || lower.contains("did not achieve the desired confidence")
}

impl Parser for Netperf {
    fn name(&self) -> &'static str {
        "netperf"
    }

    /// One test is one result. Streams: `throughput` (bit/s), `elapsed` (s); request/
    /// response tests: `transactions_per_second`, `elapsed`; with `-c`/`-C` also
    /// `local_cpu`, `remote_cpu` (%).
    ///
    /// The result row is the first all-numeric row with the column count of its test:
    /// stream rows have 5 columns (recv socket, send socket, message, elapsed, throughput),
    /// request/response rows 6 (send socket, recv socket, request, response, elapsed,
    /// rate), each plus 4 with CPU figures (two utilisations, two service demands). The
    /// banner names the test; with `-P 0` there is no banner and the column count decides.
    /// The throughput unit comes from the header (`10^6bits/sec`, `KBytes/sec` with `-f`);
    /// without a header it is netperf's default, 10^6 bits/s.
    fn parse(&self, stdout: &str, stderr: &str) -> Result<Parsed, ParseError> {
        let banner = stdout.lines().find_map(|line| {
            if line.contains("STREAM TEST") || line.contains("MAERTS TEST") {
                Some(Test::Stream)
            } else if line.contains("REQUEST/RESPONSE TEST") || line.contains("Connect/Request/Response TEST")
            {
                Some(Test::RequestResponse)
            } else {
                None
            }
        });
        let mut throughput_factor = 1e6;
        for token in stdout.lines().flat_map(str::split_whitespace) {
            if let Ok(scale) = parse_unit(token) {
                match scale.unit {
                    Unit::BitsPerSecond => throughput_factor = scale.factor,
                    // Network throughput is stored in bits whatever netperf printed.
                    Unit::BytesPerSecond if token.contains("Bytes") => throughput_factor = scale.factor * 8.0,
                    _ => {}
                }
            }
        }
        for line in stdout.lines() {
            let Some(row) = line.split_whitespace().map(number).collect::<Option<Vec<f64>>>() else {
                continue;
            };
            let test = match (banner, row.len()) {
                (Some(Test::Stream) | None, 5 | 9) => Test::Stream,
                (Some(Test::RequestResponse) | None, 6 | 10) => Test::RequestResponse,
                _ => continue,
            };
            let mut sample = Sample::default();
            let cpu_at = match test {
                Test::Stream => {
                    sample.push(
                        "throughput",
                        row[4] * throughput_factor,
                        Unit::BitsPerSecond,
                        Better::Higher,
                    );
                    sample.push("elapsed", row[3], Unit::Seconds, Better::Lower);
                    5
                }
                Test::RequestResponse => {
                    sample.push("transactions_per_second", row[5], Unit::OpsPerSecond, Better::Higher);
                    sample.push("elapsed", row[4], Unit::Seconds, Better::Lower);
                    6
                }
            };
            if row.len() > cpu_at + 1 {
                sample.push("local_cpu", row[cpu_at], Unit::Percent, Better::Lower);
                sample.push("remote_cpu", row[cpu_at + 1], Unit::Percent, Better::Lower);
            }
            // `-I` asks for a confidence interval; netperf says when it ran out of
            // iterations first (its "!!! WARNING" block, on stdout)
            let mut parsed = Parsed { samples: vec![sample], ..Parsed::default() };
            if not_confident(stdout) || not_confident(stderr) {
                parsed.flags.push(vocab::NOT_CONVERGED);
                parsed.warnings.push(
                    "netperf: the desired confidence was not achieved within the specified iterations".into(),
                );
            }
            return Ok(parsed);
        }
        Err(nothing_found("netperf", "netperf TCP_STREAM, TCP_RR or TCP_CRR result row", stdout, stderr))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::testing::{assert_metric, names};

    fn parse(text: &str) -> Sample {
        Netperf.parse(text, "").unwrap().samples.remove(0)
    }

    #[test]
    fn tcp_stream_with_a_confidence_warning() {
        // Seed 004: "netperf -H $SERVERIP -i 10,2 -I 99,5 -- -m 4096 -s 128K -S 128K",
        // 139.16 × 10^6 bit/s on xen.
        let sample = parse(include_str!("../../tests/data/parse/netperf-2.4.5-tcp_stream.txt"));
        assert_metric(&sample, "throughput", 139.16e6, Unit::BitsPerSecond);
        assert_metric(&sample, "elapsed", 10.0, Unit::Seconds);
        assert_eq!(names(&sample), ["throughput", "elapsed"]);
    }

    #[test]
    fn confidence_not_achieved_is_a_flag() {
        let text = include_str!("../../tests/data/parse/netperf-2.4.5-tcp_stream.txt");
        let parsed = Netperf.parse(text, "").unwrap();
        assert_eq!(parsed.flags, [vocab::NOT_CONVERGED]);
        let crr =
            Netperf.parse(include_str!("../../tests/data/parse/netperf-2.4.5-tcp_crr.txt"), "").unwrap();
        assert!(crr.flags.is_empty(), "no -I, no warning");
    }

    #[test]
    fn tcp_stream_one_line() {
        let sample = parse(include_str!("../../tests/data/parse/netperf-tcp_stream-P0.txt"));
        assert_metric(&sample, "throughput", 17865.77e6, Unit::BitsPerSecond);
    }

    #[test]
    fn tcp_crr() {
        // Seed 004: "netperf -H $SERVERIP -t TCP_CRR -r 32,1024", 763.83 connections/s.
        let sample = parse(include_str!("../../tests/data/parse/netperf-2.4.5-tcp_crr.txt"));
        assert_metric(&sample, "transactions_per_second", 763.83, Unit::OpsPerSecond);
        assert_metric(&sample, "elapsed", 10.0, Unit::Seconds);
    }

    #[test]
    fn tcp_rr_with_cpu() {
        let sample = parse(include_str!("../../tests/data/parse/netperf-tcp_rr-cpu.txt"));
        assert_metric(&sample, "transactions_per_second", 6591.45, Unit::OpsPerSecond);
        assert_metric(&sample, "local_cpu", 0.86, Unit::Percent);
        assert_metric(&sample, "remote_cpu", 1.34, Unit::Percent);
    }

    #[test]
    fn throughput_in_bytes_is_converted_to_bits() {
        let text = include_str!("../../tests/data/parse/netperf-2.4.5-tcp_stream.txt")
            .replace("10^6bits/sec", "KBytes/sec");
        assert_metric(&parse(&text), "throughput", 139.16 * 1024.0 * 8.0, Unit::BitsPerSecond);
    }

    #[test]
    fn the_server_not_running_is_quoted() {
        let stderr =
            "establish control: are you sure there is a netserver listening on 10.0.0.1 at port 12865?\n";
        let error = Netperf.parse("", stderr).unwrap_err();
        assert!(error.to_string().contains("netserver listening"), "{error}");
    }
}
