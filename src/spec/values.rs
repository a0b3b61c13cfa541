//! Deserialisation of the file's small value types: scalars that keep their spelling,
//! level lists, the matrix, repetitions; parsing of percentages and durations.

use std::fmt;
use std::time::Duration;

use indexmap::IndexMap;
use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};

use super::git::GitSpec;
use super::{BootsSpec, Combination, Factor, Level, Located, Matrix, MonitorSpec, RepetitionsSpec};
use vocab::{Scalar, ScalarVisitor};

impl<'de> Deserialize<'de> for Level {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LevelVisitor)
    }
}

struct LevelVisitor;

impl<'de> Visitor<'de> for LevelVisitor {
    type Value = Level;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a level (string, number, boolean) or a map of zipped values")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Level, E> {
        ScalarVisitor.visit_bool(v).map(Level::Scalar)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Level, E> {
        ScalarVisitor.visit_i64(v).map(Level::Scalar)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Level, E> {
        ScalarVisitor.visit_u64(v).map(Level::Scalar)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Level, E> {
        ScalarVisitor.visit_f64(v).map(Level::Scalar)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Level, E> {
        Ok(Level::Scalar(Scalar::str(v)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Level, E> {
        Err(E::custom("empty level (null): write the level, or quote it if it is the word `null`"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Level, A::Error> {
        Err(de::Error::custom("a level cannot be a list; write a scalar, or a map for a zipped group"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Level, A::Error> {
        let mut out = IndexMap::new();
        while let Some(key) = map.next_key::<Located<String>>()? {
            let value = map.next_value::<Located<Scalar>>()?;
            out.insert(key, value);
        }
        Ok(Level::Zip(out))
    }
}

/// A factor's level list, or its git range (`{ git: { repo, range } }`); anything else
/// gets a message saying how to write one.
struct LevelList(Vec<Located<Level>>, Option<Located<GitSpec>>);

impl<'de> Deserialize<'de> for LevelList {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LevelList;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of levels, like `[a, b]`, or a git range, `{ git: { repo: ., range: \"v1.0..v1.1\" } }`")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LevelList, A::Error> {
                let mut out = Vec::new();
                while let Some(level) = seq.next_element::<Located<Level>>()? {
                    out.push(level);
                }
                Ok(LevelList(out, None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<LevelList, E> {
                Ok(LevelList(Vec::new(), None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LevelList, A::Error> {
                let mut git = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key != "git" || git.is_some() {
                        return Err(de::Error::custom(format!(
                            "unknown key `{key}` in a factor: a factor is a list of levels, like `[a, b]`, \
                             or a git range, `{{ git: {{ repo: ., range: \"v1.0..v1.1\" }} }}`"
                        )));
                    }
                    git = Some(map.next_value::<Located<GitSpec>>()?);
                }
                match git {
                    Some(git) => Ok(LevelList(Vec::new(), Some(git))),
                    None => Err(de::Error::custom(
                        "an empty map is no factor: write a list of levels, or `{ git: { repo: ., range: \"v1.0..v1.1\" } }`",
                    )),
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<LevelList, E> {
                Err(E::custom(format!(
                    "expected a list of levels, found the single value `{v}`; write `[{v}]`"
                )))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<LevelList, E> {
                self.visit_str(&v.to_string())
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<LevelList, E> {
                self.visit_str(&v.to_string())
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<LevelList, E> {
                self.visit_str(&v.to_string())
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<LevelList, E> {
                self.visit_str(&v.to_string())
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Matrix {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Matrix;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of factors to level lists (plus `include` / `exclude`)")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Matrix, A::Error> {
                let mut m = Matrix::default();
                while let Some(key) = map.next_key::<Located<String>>()? {
                    match key.value.as_str() {
                        "include" => m.include = map.next_value::<Vec<Located<Combination>>>()?,
                        "exclude" => m.exclude = map.next_value::<Vec<Located<Combination>>>()?,
                        _ => {
                            let list = map.next_value::<Located<LevelList>>()?;
                            let LevelList(levels, git) = list.value;
                            m.factors.push(Factor { name: key, list_pos: list.pos, levels, git });
                        }
                    }
                }
                Ok(m)
            }
        }
        d.deserialize_map(V)
    }
}

impl<'de> Deserialize<'de> for RepetitionsSpec {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RepetitionsSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number of trials, `{ min: 5, max: 30, target: 2% }` or `{ min: 5, max: 30, until: verdict }`")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RepetitionsSpec, E> {
                u32::try_from(v).map(RepetitionsSpec::Fixed).map_err(|_| E::custom("too many repetitions"))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RepetitionsSpec, E> {
                match u64::try_from(v) {
                    Ok(v) => self.visit_u64(v),
                    Err(_) => Err(E::custom(format!("repetitions must be positive, found {v}"))),
                }
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RepetitionsSpec, A::Error> {
                let (mut min, mut max, mut target, mut until) = (None, None, None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "min" => min = Some(map.next_value::<u32>()?),
                        "max" => max = Some(map.next_value::<u32>()?),
                        "target" => {
                            target = Some(map.next_value::<Located<Scalar>>()?);
                        }
                        "until" => {
                            until = Some(map.next_value::<Located<Scalar>>()?);
                        }
                        other => {
                            return Err(de::Error::custom(format!(
                                "unknown field `{other}`, expected one of min, max, target, until"
                            )));
                        }
                    }
                }
                match (min, max) {
                    // `target` and `until` are exclusive: validation says so, with a hint
                    (Some(min), Some(max)) => Ok(RepetitionsSpec::Adaptive { min, max, target, until }),
                    _ => Err(de::Error::custom(
                        "adaptive repetitions need `min`, `max`, and `target` (a margin) or `until: verdict`",
                    )),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for BootsSpec {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = BootsSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number of boots, or `{ min: 3, max: 12, until: verdict }`")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<BootsSpec, E> {
                u32::try_from(v).map(BootsSpec::Fixed).map_err(|_| E::custom("too many boots"))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<BootsSpec, E> {
                match u64::try_from(v) {
                    Ok(v) => self.visit_u64(v),
                    Err(_) => Err(E::custom(format!("boots must be positive, found {v}"))),
                }
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<BootsSpec, A::Error> {
                let (mut min, mut max, mut until) = (None, None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "min" => min = Some(map.next_value::<u32>()?),
                        "max" => max = Some(map.next_value::<u32>()?),
                        "until" => until = Some(map.next_value::<Located<Scalar>>()?),
                        other => {
                            return Err(de::Error::custom(format!(
                                "unknown field `{other}`, expected one of min, max, until"
                            )));
                        }
                    }
                }
                match (min, max) {
                    (Some(min), Some(max)) => Ok(BootsSpec::Adaptive { min, max, until }),
                    _ => Err(de::Error::custom(
                        "adaptive boots need `min`, `max` and `until: verdict`, e.g. `{ min: 3, max: 12, until: verdict }`",
                    )),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for MonitorSpec {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MonitorSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("`none` or a list of sources like `[cpu, disks, vmstat, net, xl]`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<MonitorSpec, E> {
                Ok(MonitorSpec::Word(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MonitorSpec, A::Error> {
                let mut names = Vec::new();
                while let Some(name) = seq.next_element::<Located<String>>()? {
                    names.push(name);
                }
                Ok(MonitorSpec::List(names))
            }
        }
        d.deserialize_any(V)
    }
}

/// A fraction written as a percentage: `5%` is 0.05.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Percent(pub f64);

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", self.0 * 100.0)
    }
}

/// `5%` → 0.05. Bare numbers are refused: is `5` five percent or five hundred?
pub fn parse_percent(s: &Scalar) -> Result<Percent, String> {
    let bad = || format!("expected a percentage like `5%`, found `{}`", s.text);
    let number = s.text.trim().strip_suffix('%').ok_or_else(bad)?;
    let value: f64 = number.trim().parse().map_err(|_| bad())?;
    if !value.is_finite() || value <= 0.0 || value >= 100.0 {
        return Err(format!("a percentage must be above 0% and below 100%, found `{}`", s.text));
    }
    Ok(Percent(value / 100.0))
}

/// `90s`, `10m`, `1h30m`, `500ms`, `2h`, or a bare number of seconds.
pub fn parse_duration(s: &Scalar) -> Result<Duration, String> {
    let bad =
        || format!("cannot read `{}` as a duration; write e.g. `90s`, `10m`, `1h30m` or `500ms`", s.text);
    let text = s.text.trim();
    if let Ok(seconds) = text.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).map_err(|_| bad());
    }
    let mut total = 0.0_f64;
    let mut rest = text;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(bad)?;
        if digits == 0 {
            return Err(bad());
        }
        let number: f64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let factor = match rest[..unit_len].trim() {
            "ms" => 0.001,
            "s" | "sec" => 1.0,
            "m" | "min" => 60.0,
            "h" => 3600.0,
            "d" => 86400.0,
            _ => return Err(bad()),
        };
        total += number * factor;
        rest = &rest[unit_len..];
    }
    let d = Duration::try_from_secs_f64(total).map_err(|_| bad())?;
    if d.is_zero() {
        return Err(format!("a timeout of `{}` would kill every trial at once", s.text));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages() {
        assert_eq!(parse_percent(&Scalar::str("5%")).unwrap(), Percent(0.05));
        assert_eq!(parse_percent(&Scalar::str("2.5 %")).unwrap(), Percent(0.025));
        assert!(parse_percent(&Scalar::str("5")).unwrap_err().contains("like `5%`"));
        assert!(parse_percent(&Scalar::str("0%")).is_err());
        assert!(parse_percent(&Scalar::str("abc%")).is_err());
    }

    #[test]
    fn durations() {
        let d = |s: &str| parse_duration(&Scalar::str(s));
        assert_eq!(d("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(d("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(d("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(d("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(d("2.5").unwrap(), Duration::from_millis(2500));
        for bad in ["", "ten minutes", "10x", "m", "0s", "-5"] {
            assert!(d(bad).is_err(), "{bad}");
        }
    }
}
