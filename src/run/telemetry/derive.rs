//! The secondary metrics of a trial (docs/design.md §6.9), from its two snapshots: CPU
//! shares, disk bytes per device, pages written back and those dirty before, network
//! bytes per interface, CPU seconds per Xen domain.

use indexmap::IndexMap;

use super::{MEMINFO, Snapshots, XL_LIST};
use vocab::DIRTY_BEFORE;

/// Bytes per sector in `/proc/diskstats`, whatever the device's own sector size
/// (Documentation/admin-guide/iostats.rst: "sectors" are 512 bytes).
const SECTOR: f64 = 512.0;

impl Snapshots {
    /// The secondary metrics (docs/design.md §6.9), in a stable order: CPU shares, disk
    /// bytes per device, pages written back, network bytes per interface, CPU seconds per
    /// Xen domain. A counter that went backwards (a device replaced) gives nothing.
    pub(crate) fn derive(&self) -> IndexMap<String, f64> {
        // room for the usual figures (five CPU shares, a disk or two, the dirty pages) at once
        let mut out = IndexMap::with_capacity(12);
        let both = |name: &str| Some((self.before.get(name)?, self.after.get(name)?));
        if let Some((b, a)) = both("/proc/stat") {
            cpu(b, a, &mut out);
        }
        if let Some((b, a)) = both("/proc/diskstats") {
            // borrowed from the text, not a map of names per snapshot: this runs between
            // every two trials. A line the same before and after is a device
            // that moved nothing, and is not parsed at all.
            let lines: Vec<&str> = b.lines().collect();
            let mut parsed: Option<Vec<(&str, [u64; 2])>> = None;
            let mut moved: Vec<(&str, [u64; 2], [u64; 2])> = Vec::new();
            for (i, line) in a.lines().enumerate() {
                if lines.get(i) == Some(&line) {
                    continue;
                }
                let Some((device, after)) = disk_line(line) else { continue };
                // the same device on the same line, as almost always; else looked for
                let before = match lines.get(i).and_then(|l| disk_line(l)) {
                    Some((d, counts)) if d == device => Some(counts),
                    _ => parsed
                        .get_or_insert_with(|| lines.iter().filter_map(|l| disk_line(l)).collect())
                        .iter()
                        .find(|(d, _)| *d == device)
                        .map(|(_, counts)| *counts),
                };
                if let Some(before) = before {
                    moved.push((device, before, after));
                }
            }
            for (prefix, field) in [("disk_read_bytes", 0), ("disk_written_bytes", 1)] {
                for (device, before, after) in &moved {
                    if let Some(d) = after[field].checked_sub(before[field]).filter(|d| *d > 0) {
                        out.insert(format!("{prefix}:{device}"), d as f64 * SECTOR);
                    }
                }
            }
        }
        // the pages waiting to be written when the trial began (`dirty_part`)
        if let Some(text) = self.before.get(MEMINFO) {
            let kb: u64 = text
                .lines()
                .filter_map(|l| l.strip_suffix(" kB"))
                .filter_map(|l| l.split_whitespace().last()?.parse::<u64>().ok())
                .sum();
            out.insert(DIRTY_BEFORE.to_string(), kb as f64 * 1024.0);
        }
        if let Some((b, a)) = both("/proc/vmstat") {
            let field = |text: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix("nr_written "))
                    .and_then(|v| v.trim().parse::<u64>().ok())
            };
            if let (Some(b), Some(a)) = (field(b), field(a))
                && let Some(d) = a.checked_sub(b)
            {
                out.insert("vm_pages_written".to_string(), d as f64);
            }
        }
        if let Some((b, a)) = both("/proc/net/dev") {
            let (b, a) = (net_dev(b), net_dev(a));
            for (prefix, field) in [("net_rx_bytes", 0), ("net_tx_bytes", 1)] {
                for (interface, after) in &a {
                    let delta = b.get(interface).and_then(|before| after[field].checked_sub(before[field]));
                    if let Some(d) = delta.filter(|d| *d > 0) {
                        out.insert(format!("{prefix}:{interface}"), d as f64);
                    }
                }
            }
        }
        if let Some((b, a)) = both(XL_LIST) {
            let (b, a) = (xl_list(b), xl_list(a));
            for (domain, after) in &a {
                if let Some(before) = b.get(domain)
                    && after >= before
                {
                    out.insert(format!("xl_cpu_seconds:{domain}"), after - before);
                }
            }
        }
        out
    }
}

/// The `cpu` line of `/proc/stat`: user, nice, system, idle, iowait, irq, softirq, steal
/// (ticks; guest time is already inside user). Shares of all CPUs' time over the trial:
/// the ticks of all states together are the trial's wall time × CPUs as the kernel
/// counted it (proc(5), /proc/stat).
fn cpu(before: &str, after: &str, out: &mut IndexMap<String, f64>) {
    // the first eight numbers after `cpu`; none unless all eight are there
    let line = |text: &str| -> Option<[u64; 8]> {
        let l = text.lines().find(|l| l.starts_with("cpu "))?;
        let mut fields = l.split_ascii_whitespace().skip(1);
        let mut ticks = [0u64; 8];
        for t in &mut ticks {
            *t = fields.next()?.parse().ok()?;
        }
        Some(ticks)
    };
    let (Some(b), Some(a)) = (line(before), line(after)) else {
        return;
    };
    let d: [f64; 8] = std::array::from_fn(|i| a[i].saturating_sub(b[i]) as f64);
    let total: f64 = d.iter().sum();
    if total <= 0.0 {
        return; // shorter than a tick: no share can be told
    }
    let pct = |x: f64| 100.0 * x / total;
    out.insert("cpu_user_pct".into(), pct(d[0] + d[1]));
    out.insert("cpu_system_pct".into(), pct(d[2] + d[5] + d[6]));
    out.insert("cpu_iowait_pct".into(), pct(d[4]));
    out.insert("cpu_steal_pct".into(), pct(d[7]));
    out.insert("cpu_idle_pct".into(), pct(d[3]));
}

/// A diskstats line's device and [sectors read, sectors written] (fields 3, 6 and 10);
/// `None` for a line without them. The kernel writes the file in ASCII, fields apart by
/// spaces: split as ASCII, which costs a fraction of splitting at any Unicode space.
fn disk_line(line: &str) -> Option<(&str, [u64; 2])> {
    let mut f = line.split_ascii_whitespace();
    let device = f.nth(2)?;
    let read = f.nth(2)?.parse().ok()?;
    let written = f.nth(3)?.parse().ok()?;
    Some((device, [read, written]))
}

/// Interface → [bytes received, bytes sent].
fn net_dev(text: &str) -> IndexMap<String, [u64; 2]> {
    let mut out = IndexMap::new();
    for line in text.lines() {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() >= 9
            && let (Ok(rx), Ok(tx)) = (f[0].parse(), f[8].parse())
        {
            out.insert(name.trim().to_string(), [rx, tx]);
        }
    }
    out
}

/// Domain → CPU seconds (`xl list`'s last column, `Time(s)`).
fn xl_list(text: &str) -> IndexMap<String, f64> {
    let mut out = IndexMap::new();
    for line in text.lines().skip_while(|l| !l.starts_with("Name")).skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 6
            && let Ok(seconds) = f[f.len() - 1].parse::<f64>()
        {
            out.insert(f[0].to_string(), seconds);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::telemetry::{CounterSnapshot, MARK};

    const STAT_BEFORE: &str = "cpu  100 0 50 800 10 0 0 40 0 0\ncpu0 50 0 25 400 5 0 0 20 0 0\nintr 1\n";
    const STAT_AFTER: &str = "cpu  160 10 70 880 20 5 5 50 0 0\ncpu0 80 5 35 440 10 2 3 25 0 0\nintr 2\n";

    #[test]
    fn cpu_shares_are_of_all_ticks() {
        let mut out = IndexMap::new();
        cpu(STAT_BEFORE, STAT_AFTER, &mut out);
        // deltas: user 60 nice 10 system 20 idle 80 iowait 10 irq 5 softirq 5 steal 10 = 200
        assert_eq!(out["cpu_user_pct"], 35.0);
        assert_eq!(out["cpu_system_pct"], 15.0);
        assert_eq!(out["cpu_iowait_pct"], 5.0);
        assert_eq!(out["cpu_steal_pct"], 5.0);
        assert_eq!(out["cpu_idle_pct"], 40.0);
    }

    #[test]
    fn raw_text_reads_back_and_derives_disk_net_xl() {
        let before = CounterSnapshot {
            parts: vec![
                ("/proc/stat".into(), STAT_BEFORE.into()),
                ("/proc/diskstats".into(), " 254       0 vda 10 0 100 5 20 0 2000 9 0 0 0 0 0 0 0 0 0\n".into()),
                ("/proc/net/dev".into(), "Inter-| x\n face |y\n  eth0: 1000 1 0 0 0 0 0 0 500 1 0 0 0 0 0 0\n".into()),
                (XL_LIST.into(), "Name ID Mem VCPUs State Time(s)\nDomain-0 0 1024 2 r----- 10.5\ndomu 1 512 1 -b---- 3.0\n".into()),
            ],
        };
        let mut after = before.clone();
        after.parts[0].1 = STAT_AFTER.into();
        after.parts[1].1 = " 254       0 vda 10 0 100 5 30 0 4048 9 0 0 0 0 0 0 0 0 0\n".into();
        after.parts[2].1 = "Inter-| x\n face |y\n  eth0: 1500 1 0 0 0 0 0 0 800 1 0 0 0 0 0 0\n".into();
        after.parts[3].1 =
            "Name ID Mem VCPUs State Time(s)\nDomain-0 0 1024 2 r----- 12.0\ndomu 1 512 1 -b---- 3.25\n"
                .into();
        let snapshots = Snapshots { before, after };
        let raw = snapshots.render();
        assert_eq!(snapshots.render_for("t1"), format!("{MARK} trial t1\n{raw}"));
        assert!(raw.starts_with("margin-telemetry before\n==> /proc/stat <==\ncpu  100"), "{raw}");
        assert_eq!(Snapshots::parse(&raw), snapshots);
        let m = snapshots.derive();
        assert_eq!(m["disk_written_bytes:vda"], 2048.0 * 512.0);
        assert!(!m.contains_key("disk_read_bytes:vda"), "nothing read: {m:?}");
        assert_eq!(m["net_rx_bytes:eth0"], 500.0);
        assert_eq!(m["net_tx_bytes:eth0"], 300.0);
        assert_eq!(m["xl_cpu_seconds:Domain-0"], 1.5);
        assert_eq!(m["xl_cpu_seconds:domu"], 0.25);
    }

    /// The disk metrics as they were derived through a map of devices per snapshot: the
    /// borrowed, in-order reading gives the same, whatever the order of the lines.
    #[test]
    fn disk_metrics_are_what_a_map_of_devices_gave() {
        fn by_map(before: &str, after: &str) -> IndexMap<String, f64> {
            let map = |text: &str| {
                let mut out: IndexMap<String, [u64; 2]> = IndexMap::new();
                for line in text.lines() {
                    let f: Vec<&str> = line.split_whitespace().collect();
                    if f.len() >= 10
                        && let (Ok(read), Ok(written)) = (f[5].parse(), f[9].parse())
                    {
                        out.insert(f[2].to_string(), [read, written]);
                    }
                }
                out
            };
            let (b, a) = (map(before), map(after));
            let mut out = IndexMap::new();
            for (prefix, field) in [("disk_read_bytes", 0), ("disk_written_bytes", 1)] {
                for (device, after) in &a {
                    let delta = b.get(device).and_then(|before| after[field].checked_sub(before[field]));
                    if let Some(d) = delta.filter(|d| *d > 0) {
                        out.insert(format!("{prefix}:{device}"), d as f64 * SECTOR);
                    }
                }
            }
            out
        }
        let derived = |before: &str, after: &str| {
            let snapshot =
                |text: &str| CounterSnapshot { parts: vec![("/proc/diskstats".into(), text.into())] };
            Snapshots { before: snapshot(before), after: snapshot(after) }.derive()
        };
        let before = " 254 0 vda 10 0 100 5 20 0 2000 9 0 0 0\n 254 1 vda1 4 0 40 1 2 0 8 1 0 0 0\n   7 0 loop0 0 0 0 0 0 0 0 0 0 0 0\n";
        let cases = [
            // vda wrote, vda1 read and wrote
            " 254 0 vda 10 0 100 5 30 0 4048 9 0 0 0\n 254 1 vda1 4 0 48 1 3 0 9 1 0 0 0\n   7 0 loop0 0 0 0 0 0 0 0 0 0 0 0\n",
            // the lines in another order, a device gone, one new
            "   7 0 loop0 0 0 8 0 0 0 0 0 0 0 0\n 254 0 vda 10 0 100 5 30 0 4048 9 0 0 0\n 8 0 sdb 1 0 9 1 1 0 9 1 0 0 0\n",
            // a counter that went backwards, a line cut short, a word for a number
            " 254 0 vda 10 0 90 5 30 0 4048 9 0 0 0\n 254 1 vda1 4 0 48\n   7 0 loop0 0 0 x 0 0 0 0 0 0 0 0\n",
            // one line the same, the others moved down, a device in the middle gone
            "   7 0 loop0 0 0 0 0 0 0 0 0 0 0 0\n 254 0 vda 11 0 108 5 20 0 2000 9 0 0 0\n 254 1 vda1 5 0 40 1 3 0 16 1 0 0 0\n",
            " 254 0 vda 10 0 100 5 20 0 2000 9 0 0 0\n 254 1 vda1 4 0 40 1 2 0 8 1 0 0 0\n   7 0 loop0 0 0 0 0 0 0 0 0 0 0 0\n",
            "",
        ];
        for after in cases {
            assert_eq!(derived(before, after), by_map(before, after), "{after:?}");
            assert_eq!(derived(after, before), by_map(after, before), "{after:?}");
        }
        if let Ok(real) = std::fs::read_to_string("/proc/diskstats") {
            assert_eq!(derived(before, &real), by_map(before, &real));
            assert_eq!(derived(&real, &real), by_map(&real, &real));
        }
        assert!(!by_map(before, cases[0]).is_empty());
    }
}
