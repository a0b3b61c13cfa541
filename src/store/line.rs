//! A line of `runs.ndjson` as the trial columns read it ([`super::trials::Trials::push_json`]):
//! the fields of a [`super::record::TrialRecord`] they keep, borrowed from the line where
//! it holds no escapes, the others required all the same.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, IgnoredAny, MapAccess, Visitor};

use super::record::Status;
use vocab::{Better, MeanKind};

/// A string that borrows from the line when it holds no escapes.
pub(super) struct Text<'a>(pub(super) Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V(PhantomData))
    }
}

/// A JSON object's entries in their order, without a map's allocations.
pub(super) struct Pairs<'a, T>(pub(super) Vec<(Text<'a>, T)>);

impl<'a, T> Default for Pairs<'a, T> {
    fn default() -> Self {
        Pairs(Vec::new())
    }
}

impl<'de: 'a, 'a, T: Deserialize<'de>> Deserialize<'de> for Pairs<'a, T> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a, T>(PhantomData<(&'a (), T)>);
        impl<'de: 'a, 'a, T: Deserialize<'de>> Visitor<'de> for V<'a, T> {
            type Value = Pairs<'a, T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(4));
                while let Some(entry) = map.next_entry::<Text<'a>, T>()? {
                    pairs.push(entry);
                }
                Ok(Pairs(pairs))
            }
        }
        d.deserialize_map(V(PhantomData))
    }
}

#[derive(Deserialize)]
pub(super) struct Info<'a> {
    #[serde(borrow)]
    pub(super) unit: Text<'a>,
    pub(super) better: Better,
    pub(super) mean: MeanKind,
}

/// A record's `telemetry`, without its raw file's name.
#[derive(Deserialize)]
pub(super) struct TelemetryLine<'a> {
    #[serde(borrow)]
    pub(super) sources: Vec<Text<'a>>,
    #[serde(borrow, default)]
    pub(super) metrics: Pairs<'a, f64>,
}

/// The fields of a [`super::record::TrialRecord`] the columns keep, borrowed from the line. The others
/// are required all the same, so that a line is accepted here exactly when it is a
/// record.
#[derive(Deserialize)]
pub(super) struct Line<'a> {
    #[serde(borrow)]
    pub(super) trial: Text<'a>,
    #[serde(borrow)]
    pub(super) cell: Text<'a>,
    pub(super) repetition: u32,
    pub(super) warmup: bool,
    #[serde(borrow)]
    pub(super) host: Text<'a>,
    #[serde(borrow)]
    pub(super) session: Text<'a>,
    pub(super) round: u32,
    #[serde(borrow)]
    pub(super) started_at: Option<Text<'a>>,
    pub(super) status: Status,
    pub(super) exit_code: Option<i32>,
    #[serde(borrow)]
    pub(super) metrics: Pairs<'a, f64>,
    #[serde(borrow, default)]
    pub(super) metric_info: Pairs<'a, Info<'a>>,
    pub(super) wall_time: f64,
    #[serde(borrow, default)]
    pub(super) error: Option<Text<'a>>,
    #[serde(borrow, default)]
    pub(super) warnings: Vec<Text<'a>>,
    #[serde(borrow, default)]
    pub(super) telemetry: Option<TelemetryLine<'a>>,
    #[serde(borrow, default)]
    pub(super) flags: Vec<Text<'a>>,
    #[serde(rename = "schema")]
    pub(super) _schema: u32,
    #[serde(rename = "levels")]
    pub(super) _levels: IgnoredAny,
    pub(super) position: u32,
    #[serde(rename = "raw")]
    pub(super) _raw: Option<IgnoredAny>,
}
