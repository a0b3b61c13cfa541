//! Which trials of a store make one side of a comparison: the selection grammar
//! (`label=v2,since=2026-12-01`, docs/compare.md) and the records it keeps.

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;
use std::str::FromStr;

use super::VersusError;
use crate::store::{Event, SessionRecord, TrialRecord};

/// One condition of a selection.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Term {
    /// The sessions of runs given this `--label`.
    Label(String),
    /// The session with this id, or the one id that starts with it.
    Session(String),
    /// Trials that started at or after this time.
    Since(jiff::Timestamp),
    /// Trials that started before this time.
    Until(jiff::Timestamp),
}

/// Which trials of a store make one side: `label=v2`, `session=ID`, `since=TIME`,
/// `until=TIME`, several joined by commas, all of which must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    terms: Vec<Term>,
    text: String,
}

impl fmt::Display for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for Selection {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut terms = Vec::new();
        for part in text.split(',').map(str::trim) {
            let Some((key, value)) = part.split_once('=') else {
                return Err(format!(
                    "`{part}`: expected KEY=VALUE, with KEY one of label, session, since, until \
                     (e.g. `label=v2` or `since=2026-12-01,until=2026-12-02`)"
                ));
            };
            let value = value.trim();
            if value.is_empty() {
                return Err(format!("`{part}`: the value is empty"));
            }
            terms.push(match key.trim() {
                "label" => Term::Label(value.to_owned()),
                "session" => Term::Session(value.to_owned()),
                "since" => Term::Since(time(value)?),
                "until" => Term::Until(time(value)?),
                other => {
                    return Err(format!(
                        "`{other}` in `{part}`: a selection is by label, session, since or until"
                    ));
                }
            });
        }
        Ok(Selection { terms, text: text.trim().to_owned() })
    }
}

/// A time of `since=`/`until=`: RFC 3339, `YYYY-MM-DD HH:MM:SS` or `YYYY-MM-DDTHH:MM:SS`
/// (UTC), or a date alone (its midnight, UTC).
fn time(text: &str) -> Result<jiff::Timestamp, String> {
    if let Ok(t) = text.parse::<jiff::Timestamp>() {
        return Ok(t);
    }
    let utc = |d: jiff::civil::DateTime| jiff::tz::TimeZone::UTC.to_timestamp(d).ok();
    let civil = text.replacen(' ', "T", 1).parse::<jiff::civil::DateTime>().ok().and_then(utc);
    let day = || {
        text.parse::<jiff::civil::Date>().ok().and_then(|d| utc(d.to_datetime(jiff::civil::Time::midnight())))
    };
    civil.or_else(day).ok_or_else(|| {
        format!(
            "`{text}`: expected a time, RFC 3339 (2026-12-01T14:00:00Z), YYYY-MM-DD HH:MM:SS or a date \
             YYYY-MM-DD (UTC)"
        )
    })
}

/// The records of the store at `dir` that every term of the selection keeps; an unknown
/// label or session is an error naming those that exist.
pub(super) fn select(
    dir: &Path,
    selection: &Selection,
    records: Vec<TrialRecord>,
    sessions: &[SessionRecord],
) -> Result<Vec<TrialRecord>, VersusError> {
    let starts: Vec<&SessionRecord> = sessions.iter().filter(|s| s.event == Event::Start).collect();
    let mut keep_sessions: Option<BTreeSet<&str>> = None;
    fn narrow<'s>(keep: &mut Option<BTreeSet<&'s str>>, ids: BTreeSet<&'s str>) {
        *keep = Some(match keep.take() {
            None => ids,
            Some(before) => before.intersection(&ids).copied().collect(),
        });
    }
    let names = |known: Vec<&str>| -> Vec<String> { known.into_iter().map(str::to_owned).collect() };
    let (mut since, mut until) = (None, None);
    for term in &selection.terms {
        match term {
            Term::Label(label) => {
                let ids: BTreeSet<&str> = starts
                    .iter()
                    .filter(|s| s.label.as_deref() == Some(label.as_str()))
                    .map(|s| s.session.as_str())
                    .collect();
                if ids.is_empty() {
                    let mut known: Vec<&str> = starts.iter().filter_map(|s| s.label.as_deref()).collect();
                    known.dedup();
                    let (store, label) = (dir.to_owned(), label.clone());
                    return Err(VersusError::NoLabel { store, label, known: names(known) });
                }
                narrow(&mut keep_sessions, ids);
            }
            Term::Session(id) => {
                let ids: BTreeSet<&str> = starts
                    .iter()
                    .map(|s| s.session.as_str())
                    .filter(|s| s.starts_with(id.as_str()))
                    .collect();
                if ids.len() != 1 {
                    let known = names(starts.iter().map(|s| s.session.as_str()).collect());
                    let (store, id) = (dir.to_owned(), id.clone());
                    return Err(if ids.is_empty() {
                        VersusError::NoSession { store, id, known }
                    } else {
                        VersusError::AmbiguousSession { store, id, known }
                    });
                }
                narrow(&mut keep_sessions, ids);
            }
            Term::Since(t) => since = Some(since.map_or(*t, |s: jiff::Timestamp| s.max(*t))),
            Term::Until(t) => until = Some(until.map_or(*t, |u: jiff::Timestamp| u.min(*t))),
        }
    }
    let dated = since.is_some() || until.is_some();
    let kept = records
        .into_iter()
        .filter(|r| keep_sessions.as_ref().is_none_or(|ids| ids.contains(r.session.as_str())))
        .filter(|r| {
            if !dated {
                return true;
            }
            // a trial of unknown time (an import without --started-at) is in no date range
            let Some(at) = r.started_at.as_deref().and_then(|t| t.parse::<jiff::Timestamp>().ok()) else {
                return false;
            };
            since.is_none_or(|s| at >= s) && until.is_none_or(|u| at < u)
        })
        .collect();
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selection_is_terms_joined_by_commas() {
        let s: Selection = "label=v2, since=2026-12-01,until=2026-12-01 10:30:00".parse().unwrap();
        let day = jiff::Timestamp::from_second(1_796_083_200).unwrap();
        assert_eq!(
            s.terms,
            vec![
                Term::Label("v2".into()),
                Term::Since(day),
                Term::Until(day.checked_add(jiff::SignedDuration::from_secs(10 * 3600 + 1800)).unwrap()),
            ]
        );
        assert_eq!(s.to_string(), "label=v2, since=2026-12-01,until=2026-12-01 10:30:00");
        let s: Selection = "session=01a2,since=2026-12-01T10:00:00+01:00".parse().unwrap();
        assert_eq!(
            s.terms[1],
            Term::Since(day.checked_add(jiff::SignedDuration::from_secs(9 * 3600)).unwrap())
        );
    }

    #[test]
    fn a_bad_selection_says_what_is_expected() {
        let err = |text: &str| text.parse::<Selection>().unwrap_err();
        assert!(err("v2").contains("expected KEY=VALUE"), "{}", err("v2"));
        assert!(err("label=").contains("the value is empty"));
        assert!(err("tag=v2").contains("a selection is by label, session, since or until"));
        assert!(err("since=yesterday").contains("expected a time"), "{}", err("since=yesterday"));
    }
}
