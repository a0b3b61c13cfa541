//! The benchmark tools a shell command runs (dd, bonnie++, iozone, fio), read from its
//! words: whether it syncs what it writes before it ends, and how much each writes that
//! the page cache could hold.

/// Whether a command runs a `dd` that writes to a file (not /dev/null).
pub(crate) fn dd_writes_file(command: &str) -> bool {
    tools(command).iter().any(|t| matches!(t, Tool::Dd { .. }))
}

/// A benchmark tool found in a command line, with what the lints need to know. Each
/// `size` is of what the page cache could hold: none when unknown, and none when the
/// tool bypasses the cache with O_DIRECT (dd's `oflag=direct`, bonnie++'s `-D` for its
/// bulk tests — its per-char tests are 20 MiB whatever `-s` says —, iozone's `-I`,
/// fio's `--direct=1` or `--buffered=0`). A tool that `synced` its writes before it
/// ended timed the disk whatever the page cache holds: dd's `conv=fdatasync`, `fsync`,
/// `oflag=direct`, `dsync` or `sync`; a fio job that only writes, with `--end_fsync=1`,
/// `--fsync=N`, `--fdatasync=N`, `--sync=1` or `--fsync_on_close=1` (one that reads too
/// reads what the cache holds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Tool {
    /// `dd … of=FILE`: whether it syncs, and bs × count.
    Dd {
        synced: bool,
        size: Option<u64>,
    },
    Bonnie {
        size: Option<u64>,
    },
    Iozone {
        size: Option<u64>,
    },
    Fio {
        synced: bool,
        size: Option<u64>,
    },
}

impl Tool {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Tool::Dd { .. } => "dd",
            Tool::Bonnie { .. } => "bonnie++",
            Tool::Iozone { .. } => "iozone",
            Tool::Fio { .. } => "fio",
        }
    }

    pub(super) fn file_size(&self) -> Option<u64> {
        match *self {
            Tool::Dd { size, .. }
            | Tool::Bonnie { size }
            | Tool::Iozone { size }
            | Tool::Fio { size, .. } => size,
        }
    }

    /// Whether what it writes reached the disk before it ended (see [`Tool`]).
    pub(super) fn synced(&self) -> bool {
        matches!(self, Tool::Dd { synced: true, .. } | Tool::Fio { synced: true, .. })
    }
}

/// The tools a shell command runs, one per simple command (split at `;`, `|`, `&`).
pub(super) fn tools(command: &str) -> Vec<Tool> {
    command
        .split([';', '|', '&', '\n'])
        .filter_map(|segment| {
            let words = shlex::split(segment)
                .unwrap_or_else(|| segment.split_whitespace().map(str::to_owned).collect());
            let at = words.iter().position(|w| {
                matches!(w.rsplit('/').next(), Some("dd" | "bonnie++" | "bonnie" | "iozone" | "fio"))
            })?;
            let program = words[at].rsplit('/').next().unwrap_or_default();
            let args = &words[at + 1..];
            match program {
                "dd" => dd(args),
                "iozone" => {
                    // throughput mode (-t N) writes N files of -s each, all at once
                    let files = flag_value(args, "-t").map_or(Some(1), |t| t.parse::<u64>().ok());
                    let each = flag_value(args, "-s").and_then(|v| size(&v, 1 << 10));
                    let size = each.zip(files).and_then(|(s, n)| s.checked_mul(n));
                    Some(Tool::Iozone { size: size.filter(|_| !has(args, "-I")) })
                }
                "fio" => {
                    let value = ["--size", "--filesize"].iter().find_map(|f| flag_value(args, f));
                    let direct = flag_value(args, "--direct").is_some_and(|v| v == "1")
                        || flag_value(args, "--buffered").is_some_and(|v| v == "0");
                    Some(Tool::Fio {
                        synced: fio_synced(args),
                        size: value.and_then(|v| size(&v, 1)).filter(|_| !direct),
                    })
                }
                _ => {
                    // bonnie++ -s SIZE[:CHUNK], in MiB unless suffixed.
                    let value = flag_value(args, "-s");
                    let value = value.as_deref().map(|v| v.split(':').next().unwrap_or(v));
                    let size = value.and_then(|v| size(v, 1 << 20));
                    Some(Tool::Bonnie { size: size.filter(|_| !has(args, "-D")) })
                }
            }
        })
        .collect()
}

/// Whether a fio job only writes (`--rw`/`--readwrite`: write, randwrite, trimwrite;
/// fio's default reads) and syncs before it ends.
fn fio_synced(args: &[String]) -> bool {
    let value = |flag: &str| flag_value(args, flag);
    let rw = value("--rw").or_else(|| value("--readwrite")).unwrap_or_default();
    let writes = matches!(rw.split(':').next(), Some("write" | "randwrite" | "trimwrite"));
    let positive = |flag: &str| value(flag).and_then(|v| v.parse::<u64>().ok()).is_some_and(|n| n > 0);
    let syncs = positive("--end_fsync")
        || positive("--fsync")
        || positive("--fdatasync")
        || positive("--fsync_on_close")
        || value("--sync").is_some_and(|v| matches!(v.as_str(), "1" | "sync" | "dsync"));
    writes && syncs
}

/// dd's operands; `None` unless it writes to a file (`of=` other than /dev/null).
fn dd(args: &[String]) -> Option<Tool> {
    let operand = |name: &str| args.iter().rev().find_map(|a| a.strip_prefix(name)?.strip_prefix('='));
    let of = operand("of")?;
    if of == "/dev/null" {
        return None;
    }
    let flags = |name: &str| {
        operand(name).map(|v| v.split(',').map(str::to_owned).collect::<Vec<_>>()).unwrap_or_default()
    };
    let conv = flags("conv");
    let oflag = flags("oflag");
    // fdatasync, fsync and direct bypass or flush the page cache; dsync and sync make every write
    // synchronous, which is as honest (and slower).
    let synced = conv.iter().any(|c| c == "fdatasync" || c == "fsync")
        || oflag.iter().any(|o| o == "direct" || o == "dsync" || o == "sync");
    let block = operand("bs").or_else(|| operand("obs")).map_or(Some(512), dd_number);
    let count = operand("count").and_then(dd_number);
    let size = block.zip(count).and_then(|(b, c)| b.checked_mul(c));
    let size = size.filter(|_| !oflag.iter().any(|o| o == "direct"));
    Some(Tool::Dd { synced, size })
}

/// A dd number: digits and GNU dd's multiplicative suffixes (c, w, b, kB, K, KiB, MB, M…).
fn dd_number(text: &str) -> Option<u64> {
    let digits = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let value: u64 = text[..digits].parse().ok()?;
    let factor: u64 = match &text[digits..] {
        "" | "c" => 1,
        "w" => 2,
        "b" => 512,
        suffix => {
            let letter = suffix.chars().next()?.to_ascii_uppercase();
            let power = "KMGTPE".find(letter)? as u32 + 1;
            match &suffix[1..] {
                "B" => 1000u64.checked_pow(power)?,
                "" | "iB" => 1024u64.checked_pow(power)?,
                _ => return None,
            }
        }
    };
    value.checked_mul(factor)
}

/// `N[k|m|g|t]` as bonnie++, iozone and fio write sizes (powers of 1024, an optional `i`
/// and `B`), `default` bytes per unit when unsuffixed.
fn size(text: &str, default: u64) -> Option<u64> {
    let text = text.trim();
    let digits = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let value: f64 = text[..digits].parse().ok()?;
    let suffix = text[digits..].trim_end_matches(['B', 'b']).trim_end_matches('i');
    let factor = match suffix.to_ascii_lowercase().as_str() {
        "" => default,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        _ => return None,
    };
    Some((value * factor as f64) as u64)
}

/// Whether `flag` is one of `args`.
fn has(args: &[String], flag: &str) -> bool {
    args.iter().any(|a| a == flag)
}

/// The value of `flag` (`-s 5g`, `-s5g`, `--size=5g`, `--size 5g`) in `args`.
fn flag_value(args: &[String], flag: &str) -> Option<String> {
    args.iter().enumerate().find_map(|(i, a)| {
        if a == flag {
            args.get(i + 1).cloned()
        } else if let Some(v) = a.strip_prefix(flag) {
            let v = v.strip_prefix('=').unwrap_or(v);
            (!v.is_empty() && (flag.len() == 2 || a.contains('='))).then(|| v.to_owned())
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dd_numbers_follow_gnu_suffixes() {
        for (text, bytes) in [
            ("512", 512),
            ("4k", 4096),
            ("4K", 4096),
            ("1kB", 1000),
            ("10M", 10 << 20),
            ("1MB", 1_000_000),
            ("2GiB", 2 << 30),
            ("3w", 6),
            ("2b", 1024),
        ] {
            assert_eq!(dd_number(text), Some(bytes), "{text}");
        }
        assert_eq!(dd_number("4q"), None);
        assert_eq!(dd_number("k"), None);
    }

    #[test]
    fn dd_without_a_sync_flag_is_found_with_its_size() {
        let found = tools("sync; dd if=/dev/zero of=/tmp/zero.tst bs=100M count=50 && rm -f x");
        assert_eq!(found, [Tool::Dd { synced: false, size: Some(50 * (100 << 20)) }]);
        for synced in ["conv=fdatasync", "conv=notrunc,fsync", "oflag=dsync"] {
            let found = tools(&format!("/bin/dd if=/dev/zero of=f bs=1k count=3 {synced}"));
            assert_eq!(found, [Tool::Dd { synced: true, size: Some(3072) }], "{synced}");
        }
        assert_eq!(tools("dd if=/dev/sda of=/dev/null bs=1M"), []);
        assert_eq!(tools("dd if=f"), [], "reads only");
    }

    #[test]
    fn bonnie_iozone_and_fio_sizes() {
        assert_eq!(tools("bonnie++ -d /mnt -s 5000 -m x -x 10"), [Tool::Bonnie { size: Some(5000 << 20) }]);
        assert_eq!(tools("bonnie++ -s 8g:4k"), [Tool::Bonnie { size: Some(8 << 30) }]);
        assert_eq!(tools("iozone -i 0 -s 512m -r 4k"), [Tool::Iozone { size: Some(512 << 20) }]);
        assert_eq!(tools("iozone -s4096 -r 4k"), [Tool::Iozone { size: Some(4096 << 10) }]);
        let seed_001 = "iozone -M -c -e -w -i0 -r256k -s1g -t10 -F d1 d2 d3 d4 d5 d6 d7 d8 d9 d0";
        assert_eq!(tools(seed_001), [Tool::Iozone { size: Some(10 << 30) }], "ten files of 1 GiB");
        assert_eq!(
            tools("fio --name=w --size=1G --rw=write"),
            [Tool::Fio { synced: false, size: Some(1 << 30) }]
        );
        assert_eq!(tools("fio --name=w --filesize 2MiB"), [Tool::Fio { synced: false, size: Some(2 << 20) }]);
        // O_DIRECT: nothing for the page cache to hold (seed 000's bonnie++ -D in the lab)
        assert_eq!(tools("bonnie++ -d /mnt -s 512 -n 0 -D -u root"), [Tool::Bonnie { size: None }]);
        assert_eq!(
            tools("bonnie++ -d /mnt -s 512 -n 0 -b -u root"),
            [Tool::Bonnie { size: Some(512 << 20) }]
        );
        assert_eq!(tools("iozone -I -i 0 -s 512m -r 4k"), [Tool::Iozone { size: None }]);
        assert_eq!(tools("fio --name=w --size=1G --direct=1"), [Tool::Fio { synced: false, size: None }]);
        assert_eq!(tools("fio --name=w --size=1G --buffered=0"), [Tool::Fio { synced: false, size: None }]);
        assert_eq!(
            tools("fio --name=w --size=1G --direct=0"),
            [Tool::Fio { synced: false, size: Some(1 << 30) }]
        );
        // a job that only writes and syncs at its end times the disk; one that reads does not
        for synced in ["--end_fsync=1", "--fsync=32", "--fdatasync 1", "--sync=dsync", "--fsync_on_close=1"] {
            let job = format!("fio --name=w --size=1G --rw=write {synced}");
            assert!(tools(&job)[0].synced(), "{job}");
        }
        assert!(!tools("fio --name=w --size=1G --rw=randrw --end_fsync=1")[0].synced());
        assert!(!tools("fio --name=w --size=1G --end_fsync=1")[0].synced(), "fio reads by default");
        assert!(!tools("fio --name=w --size=1G --rw=write --end_fsync=0")[0].synced());
        let direct = "dd if=/dev/zero of=f bs=1M count=64 oflag=direct";
        assert_eq!(tools(direct), [Tool::Dd { synced: true, size: None }]);
        assert_eq!(tools("echo dd"), []);
    }
}
