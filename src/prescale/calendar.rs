//! A schedule laid out on wall-clock minutes over a horizon of days: one
//! bit per minute, set where the schedule fires. The rules that compare a
//! schedule with its primer (shortest gap, "a primer fires before each
//! run", "the derived primer is exactly the runs moved back") are read off
//! these bits. Wall-clock time: daylight-saving changes are not laid out
//! here (see [`super::instant`] for what they do to a run).

use chrono::{Days, NaiveDate, NaiveDateTime};

use super::cron::Schedule;

/// Minutes in a day.
pub const DAY: usize = 1440;

/// Two leap-year cycles: every month length, every weekday of every date
/// at least once, and the 29th of February twice.
pub const HORIZON_DAYS: u32 = 8 * 365 + 2;

#[derive(Debug, Clone)]
pub struct Calendar {
    from: NaiveDate,
    len: usize,
    words: Vec<u64>,
}

impl Calendar {
    /// The minutes `s` fires at on `days` days from `from`: the schedule's
    /// day (1440 bits) ORed in, word by word, on each matching day.
    pub fn of(s: &Schedule, from: NaiveDate, days: u32) -> Calendar {
        let len = days as usize * DAY;
        let mut pattern = [0u64; DAY.div_ceil(64)];
        for t in s.times_of_day() {
            pattern[t as usize / 64] |= 1 << (t % 64);
        }
        // Two spare words for the last day's shifted tail.
        let mut words = vec![0u64; len.div_ceil(64) + 2];
        let mut date = from;
        for d in 0..days as usize {
            if s.day_matches(date) {
                let (q, r) = (d * DAY / 64, d * DAY % 64);
                for (i, p) in pattern.iter().enumerate().filter(|(_, p)| **p != 0) {
                    words[q + i] |= p << r;
                    if r > 0 {
                        words[q + i + 1] |= p >> (64 - r);
                    }
                }
            }
            date = date + Days::new(1);
        }
        words.truncate(len.div_ceil(64));
        Calendar { from, len, words }
    }

    /// The first day laid out.
    pub fn from(&self) -> NaiveDate {
        self.from
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|w| *w == 0)
    }

    pub fn get(&self, i: usize) -> bool {
        i < self.len && self.words[i / 64] & (1 << (i % 64)) != 0
    }

    /// The first set minute at or after `i`.
    pub fn next_one(&self, i: usize) -> Option<usize> {
        if i >= self.len {
            return None;
        }
        let mut w = i / 64;
        let mut bits = self.words[w] & (!0u64 << (i % 64));
        loop {
            if bits != 0 {
                let found = w * 64 + bits.trailing_zeros() as usize;
                return (found < self.len).then_some(found);
            }
            w += 1;
            if w >= self.words.len() {
                return None;
            }
            bits = self.words[w];
        }
    }

    /// The wall-clock time of minute `i`.
    pub fn at(&self, i: usize) -> NaiveDateTime {
        let day = self.from + Days::new((i / DAY) as u64);
        let tod = i % DAY;
        day.and_hms_opt((tod / 60) as u32, (tod % 60) as u32, 0)
            .unwrap_or_default()
    }

    /// 64 bits starting at bit `pos` (bits past the end read as 0).
    fn word_at(&self, pos: usize) -> u64 {
        let (q, r) = (pos / 64, pos % 64);
        let lo = self.words.get(q).copied().unwrap_or(0);
        if r == 0 {
            return lo;
        }
        let hi = self.words.get(q + 1).copied().unwrap_or(0);
        (lo >> r) | (hi << (64 - r))
    }

    /// How many minutes are set.
    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The shortest time between two consecutive runs, in minutes; `None`
    /// with fewer than two runs. The closest two runs are always
    /// consecutive, so for a dense schedule it is the smallest shift `k`
    /// at which the bits meet themselves (`k` is at most the average gap);
    /// a sparse one is walked run by run.
    pub fn shortest_gap(&self) -> Option<usize> {
        let count = self.count();
        if count < 2 {
            return None;
        }
        // Shifting costs (average gap) × (words); walking costs a step per
        // run: shifting wins when more than one minute in ~16 is a run.
        if count > self.len / 16 {
            let most = self.len / (count - 1) + 1;
            return (1..=most).find(|k| self.meets_itself_at(*k));
        }
        let mut prev = self.next_one(0)?;
        let mut best: Option<usize> = None;
        while let Some(i) = self.next_one(prev + 1) {
            let gap = i - prev;
            best = Some(best.map_or(gap, |b| b.min(gap)));
            prev = i;
        }
        best
    }

    /// Whether some set minute `i` has `i + k` set too.
    fn meets_itself_at(&self, k: usize) -> bool {
        let n = self.len.saturating_sub(k);
        let mut pos = 0;
        while pos < n {
            let mut both = self.word_at(pos) & self.word_at(pos + k);
            if n - pos < 64 {
                both &= (1u64 << (n - pos)) - 1;
            }
            if both != 0 {
                return true;
            }
            pos += 64;
        }
        false
    }

    /// The first minute `i` where `self[i] != later[i + shift]`: where a
    /// primer fires with no run `shift` minutes later, or a run has no
    /// primer `shift` minutes before. `None` when they agree everywhere
    /// both are laid out.
    pub fn first_mismatch(&self, later: &Calendar, shift: usize) -> Option<usize> {
        let n = self.len.min(later.len.saturating_sub(shift));
        let mut pos = 0;
        while pos < n {
            let mut diff = self.word_at(pos) ^ later.word_at(pos + shift);
            if n - pos < 64 {
                diff &= (1u64 << (n - pos)) - 1;
            }
            if diff != 0 {
                return Some(pos + diff.trailing_zeros() as usize);
            }
            pos += 64;
        }
        None
    }
}

/// What is wrong with a primer schedule against its runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Coverage {
    /// Each run has exactly one primer strictly between it and the run
    /// before; the longest primer-to-run wait, in minutes.
    Covered { longest_wait: usize },
    /// No primer fires between the run at `prev` and the run at `run`.
    Missing { prev: usize, run: usize },
    /// More than one primer fires between the two runs.
    Extra {
        prev: usize,
        run: usize,
        first: usize,
        second: usize,
    },
    /// A primer fires at the same minute as a run.
    Coincides { at: usize },
}

/// Checks that exactly one primer fires strictly between each two
/// consecutive runs (the first run in the horizon is not judged: its
/// previous run is outside).
pub fn coverage(runs: &Calendar, primer: &Calendar) -> Coverage {
    let Some(mut prev) = runs.next_one(0) else {
        return Coverage::Covered { longest_wait: 0 };
    };
    if primer.get(prev) {
        return Coverage::Coincides { at: prev };
    }
    let mut longest = 0;
    while let Some(run) = runs.next_one(prev + 1) {
        if primer.get(run) {
            return Coverage::Coincides { at: run };
        }
        match primer.next_one(prev + 1).filter(|p| *p < run) {
            None => return Coverage::Missing { prev, run },
            Some(first) => {
                if let Some(second) = primer.next_one(first + 1).filter(|p| *p < run) {
                    return Coverage::Extra {
                        prev,
                        run,
                        first,
                        second,
                    };
                }
                longest = longest.max(run - first);
            }
        }
        prev = run;
    }
    Coverage::Covered {
        longest_wait: longest,
    }
}

#[cfg(test)]
mod tests {
    use chrono::Timelike;

    use super::*;

    fn cal(spec: &str) -> Calendar {
        Calendar::of(
            &Schedule::parse(spec).unwrap(),
            NaiveDate::from_ymd_opt(2024, 1, 1).unwrap(),
            HORIZON_DAYS,
        )
    }

    /// The word-level layout sets exactly the minutes a per-minute walk
    /// finds (days start at bit offsets 0 and 32 in turn).
    #[test]
    fn layout_matches_a_minute_by_minute_walk() {
        let from = NaiveDate::from_ymd_opt(2024, 1, 1).unwrap();
        for spec in [
            "0 0 * * *",
            "59 23 * * *",
            "*/7 * * * 1,3",
            "0,31 * * * *",
            "5 0 13 * 5",
            "0 12 29 2 *",
        ] {
            let s = Schedule::parse(spec).unwrap();
            let c = Calendar::of(&s, from, 40);
            for i in 0..c.len() {
                let t = c.at(i);
                let want =
                    s.day_matches(t.date()) && s.hour.has(t.hour()) && s.minute.has(t.minute());
                assert_eq!(c.get(i), want, "{spec} at {t}");
            }
        }
    }

    #[test]
    fn gaps() {
        assert_eq!(cal("5/30 * * * *").shortest_gap(), Some(30));
        assert_eq!(cal("5,12,48,56 * * * 5").shortest_gap(), Some(7));
        assert_eq!(cal("0 0 * * *").shortest_gap(), Some(DAY));
        assert_eq!(cal("0 23 * * *").shortest_gap(), Some(DAY));
        // 22:00 and 01:00 the next morning.
        assert_eq!(cal("0 1,22 * * *").shortest_gap(), Some(180));
        assert_eq!(cal("0 0 1 * *").shortest_gap(), Some(28 * DAY));
        assert!(cal("0 0 30 2 *").is_empty());
        // Dense schedules take the shift path; same answers.
        assert_eq!(cal("*/2 * * * *").shortest_gap(), Some(2));
        assert_eq!(cal("*/7 * * * *").shortest_gap(), Some(4));
        assert_eq!(cal("0,10,11 * * * *").shortest_gap(), Some(1));
        assert_eq!(cal("0-50/5 * * * 1-5").shortest_gap(), Some(5));
    }

    #[test]
    fn mismatch_finds_the_first_disagreement() {
        let runs = cal("0 0 * * *");
        let good = cal("50 23 * * *");
        assert_eq!(good.first_mismatch(&runs, 10), None);
        let wrong_day = cal("50 23 * * 4");
        let i = wrong_day.first_mismatch(&runs, 10).unwrap();
        // 2024-01-01 is a Monday: its 23:50 should prime Tuesday's run.
        assert_eq!(wrong_day.at(i).to_string(), "2024-01-01 23:50:00");
    }

    #[test]
    fn coverage_of_the_upstream_primer_sample() {
        let runs = cal("5/30 * * * *");
        assert_eq!(
            coverage(&runs, &cal("*/30 * * * *")),
            Coverage::Covered { longest_wait: 5 }
        );
        assert!(matches!(
            coverage(&runs, &cal("0 * * * *")),
            Coverage::Missing { .. }
        ));
        assert!(matches!(
            coverage(&runs, &cal("0,1,30,31 * * * *")),
            Coverage::Extra { .. }
        ));
        assert!(matches!(
            coverage(&runs, &cal("5/30 * * * *")),
            Coverage::Coincides { .. }
        ));
    }
}
