//! The trial before each trial on its host (docs/statistics.md, What decides a regime):
//! the cell of the trial that ran just before it in the same session, kept with each
//! group's rows ([`Rows::before`](super::table::Rows::before)).

use crate::store::{Name, Names, Trials};

/// The cell of a trial's trial before ([`Rows::before`](super::table::Rows::before)) in four bytes: a name of
/// [`Trials::names`] by its number, or none (the session's first trial on its host).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Prior(u32);

impl Prior {
    pub(super) const NONE: Prior = Prior(u32::MAX);

    pub(super) fn of(name: Name) -> Prior {
        Prior(u32::try_from(name.index()).expect("fewer than 4 billion names"))
    }

    /// The cell's name in `names`, the names it was taken from; `None` for none.
    pub(crate) fn name(self, names: &Names) -> Option<Name> {
        (self != Prior::NONE).then(|| names.nth(self.0 as usize))
    }
}

/// Each trial's trial before on its host in its session: the cell of the one logged last
/// before it with the same session and host. A host runs one trial at a time and logs
/// each before the next starts, so its log order is the order its trials ran in.
pub(super) fn before_on_host(trials: &Trials) -> Vec<Prior> {
    // a run's sessions and hosts are few: the last cell of each, found by a look along a
    // short list (the trial before's key first, almost always the one)
    let mut last: Vec<((Name, Name), Prior)> = Vec::new();
    let mut hit = 0;
    (0..trials.cell.len())
        .map(|t| {
            let key = (trials.session[t], trials.host[t]);
            let cell = Prior::of(trials.cell[t]);
            if last.get(hit).is_none_or(|(k, _)| *k != key) {
                match last.iter().position(|(k, _)| *k == key) {
                    Some(i) => hit = i,
                    None => {
                        last.push((key, cell));
                        hit = last.len() - 1;
                        return Prior::NONE;
                    }
                }
            }
            std::mem::replace(&mut last[hit].1, cell)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each trial's trial before is the cell of the last trial logged before it with its
    /// session and host (a warm-up or failed one too), whatever other hosts log between.
    #[test]
    fn the_trial_before_is_the_last_one_logged_on_the_same_host_in_the_same_session() {
        for seed in 0..5 {
            let mut f = super::super::table::tests::varied(seed);
            // the two sessions' hosts logging in turns, as two hosts of one run do
            let first = f.records[0].session.clone();
            let (one, two): (Vec<_>, Vec<_>) = f.records.drain(..).partition(|r| r.session == first);
            let mut records = Vec::new();
            let (mut a, mut b) = (one.into_iter(), two.into_iter());
            loop {
                match (a.next(), b.next()) {
                    (None, None) => break,
                    (x, y) => records.extend(x.into_iter().chain(y)),
                }
            }
            let trials = Trials::from_records(&records);
            let before = before_on_host(&trials);
            for (i, r) in records.iter().enumerate() {
                let naive = records[..i].iter().rev().find(|p| p.session == r.session && p.host == r.host);
                let got = before[i].name(&trials.names).map(|name| trials.names.get(name));
                assert_eq!(got, naive.map(|p| p.cell.as_str()), "seed {seed}, trial {i}");
            }
            assert!(
                before.iter().filter(|b| b.name(&trials.names).is_none()).count() == 2,
                "seed {seed}: one first trial per host"
            );
        }
    }
}
