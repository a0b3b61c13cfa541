//! iperf3: the `-J` report of a TCP or UDP test.

use serde_json::Value;

use super::{Better, ParseError, Parsed, Parser, Sample, Unit, json_document, nothing_found};

pub(super) struct Iperf3;

impl Parser for Iperf3 {
    fn name(&self) -> &'static str {
        "iperf3"
    }

    /// One test is one result: `sender.throughput`, `receiver.throughput` (bit/s),
    /// `sender.bytes`, `receiver.bytes`, and `sender.retransmits` for TCP; for UDP also
    /// `receiver.jitter` (s), `receiver.lost_percent`, `receiver.lost_packets`,
    /// `receiver.packets`; and `cpu.host_total`, `cpu.remote_total` (%).
    fn parse(&self, stdout: &str, stderr: &str) -> Result<Parsed, ParseError> {
        let Some(report) = json_document(stdout) else {
            return Err(nothing_found("iperf3", "iperf3 JSON report (-J)", stdout, stderr));
        };
        // iperf3 -J reports a refused connection or an interrupted test in "error", next
        // to an empty or partial "end".
        if let Some(error) = report.get("error").and_then(Value::as_str) {
            return Err(ParseError::Tool { parser: "iperf3", message: error.to_owned() });
        }
        let Some(end) = report.get("end") else {
            return Err(nothing_found("iperf3", "\"end\" in iperf3's JSON report", stdout, stderr));
        };
        let mut sample = Sample::default();
        for (side, key) in [("sender", "sum_sent"), ("receiver", "sum_received")] {
            let Some(sum) = end.get(key) else { continue };
            push(
                &mut sample,
                sum,
                "bits_per_second",
                &format!("{side}.throughput"),
                Unit::BitsPerSecond,
                Better::Higher,
            );
            push(&mut sample, sum, "bytes", &format!("{side}.bytes"), Unit::Bytes, Better::Higher);
        }
        if let Some(sent) = end.get("sum_sent") {
            push(&mut sample, sent, "retransmits", "sender.retransmits", Unit::Count, Better::Lower);
        }
        // UDP: the receiver's view of jitter and loss. iperf3 ≥ 3.11 puts it in
        // "sum_received"; older versions only in "sum" (as reported by the server).
        let udp = [end.get("sum_received"), end.get("sum")]
            .into_iter()
            .flatten()
            .find(|sum| sum.get("jitter_ms").is_some());
        if let Some(udp) = udp {
            if let Some(jitter) = udp.get("jitter_ms").and_then(Value::as_f64) {
                sample.push("receiver.jitter", jitter * 1e-3, Unit::Seconds, Better::Lower);
            }
            push(&mut sample, udp, "lost_percent", "receiver.lost_percent", Unit::Percent, Better::Lower);
            push(&mut sample, udp, "lost_packets", "receiver.lost_packets", Unit::Count, Better::Lower);
            push(&mut sample, udp, "packets", "receiver.packets", Unit::Count, Better::Higher);
        }
        if let Some(cpu) = end.get("cpu_utilization_percent") {
            push(&mut sample, cpu, "host_total", "cpu.host_total", Unit::Percent, Better::Lower);
            push(&mut sample, cpu, "remote_total", "cpu.remote_total", Unit::Percent, Better::Lower);
        }
        if sample.get("sender.throughput").is_none() && sample.get("receiver.throughput").is_none() {
            return Err(nothing_found("iperf3", "iperf3 throughput summary", stdout, stderr));
        }
        Ok(Parsed { samples: vec![sample], ..Parsed::default() })
    }
}

fn push(sample: &mut Sample, object: &Value, key: &str, name: &str, unit: Unit, better: Better) {
    if let Some(value) = object.get(key).and_then(Value::as_f64) {
        sample.push(name, value, unit, better);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::testing::assert_metric;

    #[test]
    fn tcp() {
        let text = include_str!("../../tests/data/parse/iperf3-3.12-tcp.json");
        let sample = &Iperf3.parse(text, "").unwrap().samples[0];
        assert_metric(sample, "sender.throughput", 21453004460.231064, Unit::BitsPerSecond);
        assert_metric(sample, "receiver.throughput", 21445307784.440712, Unit::BitsPerSecond);
        assert_metric(sample, "sender.bytes", 5364776960.0, Unit::Bytes);
        assert_metric(sample, "sender.retransmits", 18.0, Unit::Count);
        assert_metric(sample, "cpu.host_total", 98.39569388860733, Unit::Percent);
        assert_metric(sample, "cpu.remote_total", 37.35333842004986, Unit::Percent);
        assert!(sample.get("receiver.jitter").is_none());
    }

    #[test]
    fn udp() {
        let text = include_str!("../../tests/data/parse/iperf3-3.12-udp.json");
        let sample = &Iperf3.parse(text, "").unwrap().samples[0];
        assert_metric(sample, "sender.throughput", 200005471.71547082, Unit::BitsPerSecond);
        assert_metric(sample, "receiver.throughput", 199982574.90127894, Unit::BitsPerSecond);
        assert_metric(sample, "receiver.jitter", 0.013178694571339043e-3, Unit::Seconds);
        assert_metric(sample, "receiver.lost_percent", 0.0, Unit::Percent);
        assert_metric(sample, "receiver.packets", 1526.0, Unit::Count);
        assert!(sample.get("sender.retransmits").is_none());
    }

    #[test]
    fn udp_of_iperf3_before_3_11_reads_sum() {
        let text = r#"{"end": {"sum": {"bytes": 1000, "bits_per_second": 8000.0, "jitter_ms": 2.5,
            "lost_packets": 3, "packets": 100, "lost_percent": 3.0}}}"#;
        let error = Iperf3.parse(text, "").unwrap_err();
        assert!(matches!(error, ParseError::NothingFound { .. }), "no throughput sums: {error}");
        let text = text.replace(r#""end": {"#, r#""end": {"sum_sent": {"bits_per_second": 9000.0}, "#);
        let sample = &Iperf3.parse(&text, "").unwrap().samples[0];
        assert_metric(sample, "receiver.jitter", 2.5e-3, Unit::Seconds);
        assert_metric(sample, "receiver.lost_packets", 3.0, Unit::Count);
    }

    #[test]
    fn the_error_field_is_an_error() {
        let text = include_str!("../../tests/data/parse/iperf3-3.12-refused.json");
        let error = Iperf3.parse(text, "").unwrap_err();
        assert_eq!(
            error,
            ParseError::Tool {
                parser: "iperf3",
                message: "unable to connect to server: Connection refused".to_owned()
            }
        );
    }
}
