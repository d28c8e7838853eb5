//! Tables as kubectl prints them: upper-cased headers, cells padded to the
//! widest in their column plus three spaces (at least six wide), the last
//! column unpadded; with `-A` a NAMESPACE column first. Ages as kubectl's
//! `duration.HumanDuration`.

/// A table under construction: column names as upstream spells them, and
/// rows of cells.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// kubectl's tabwriter (`printers.GetNewTabWriter`): minimum cell width 6,
/// padding 3.
const MIN_WIDTH: usize = 6;
const PADDING: usize = 3;

impl Table {
    pub fn new<S: Into<String>>(columns: Vec<S>) -> Self {
        Table {
            columns: columns.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// The table as text; `headers: false` prints rows only.
    pub fn render(&self, headers: bool) -> String {
        let upper: Vec<String> = self.columns.iter().map(|c| c.to_uppercase()).collect();
        self.layout(headers.then_some(upper))
    }

    /// The table with its headers as given (custom-columns).
    pub fn render_as_given(&self) -> String {
        self.layout(Some(self.columns.clone()))
    }

    fn layout(&self, headers: Option<Vec<String>>) -> String {
        let mut lines: Vec<Vec<String>> = Vec::with_capacity(self.rows.len() + 1);
        lines.extend(headers);
        lines.extend(self.rows.iter().cloned());
        let n = self.columns.len();
        let mut widths = vec![0usize; n];
        for l in &lines {
            for (i, c) in l.iter().enumerate().take(n) {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        for l in &lines {
            for (i, c) in l.iter().enumerate().take(n) {
                out.push_str(c);
                if i + 1 < n {
                    let w = (widths[i] + PADDING).max(MIN_WIDTH);
                    out.extend(std::iter::repeat_n(' ', w - c.chars().count()));
                }
            }
            out.push('\n');
        }
        out
    }

    /// Adds a NAMESPACE column first, filled from `namespaces` (one per row).
    pub fn with_namespaces(mut self, namespaces: &[String]) -> Self {
        self.columns.insert(0, "Namespace".to_string());
        for (row, ns) in self.rows.iter_mut().zip(namespaces) {
            row.insert(0, ns.clone());
        }
        self
    }
}

/// kubectl's `duration.HumanDuration` of a span in seconds: `45s`, `2m30s`,
/// `15m`, `3h20m`, `36h`, `3d4h`, `20d`, `2y30d`, `9y`.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_padded_like_kubectls_tabwriter() {
        let mut t = Table::new(vec!["Name", "Cohort", "Pending Workloads", "Age"]);
        t.rows
            .push(vec!["cq1".into(), "".into(), "0".into(), "5s".into()]);
        t.rows.push(vec![
            "a-much-longer-name".into(),
            "co".into(),
            "12".into(),
            "3d4h".into(),
        ]);
        let want = [
            "NAME                 COHORT   PENDING WORKLOADS   AGE",
            "cq1                           0                   5s",
            "a-much-longer-name   co       12                  3d4h",
        ];
        assert_eq!(t.render(true), want.join("\n") + "\n");
        // Without headers the widths come from the rows alone.
        assert_eq!(
            t.render(false).lines().next(),
            Some("cq1                        0     5s")
        );
    }

    #[test]
    fn a_namespace_column_goes_first() {
        let mut t = Table::new(vec!["Name"]);
        t.rows.push(vec!["x".into()]);
        let t = t.with_namespaces(&["team-a".into()]);
        assert_eq!(t.render(true), "NAMESPACE   NAME\nteam-a      x\n");
    }

    #[test]
    fn ages_read_like_kubectls() {
        for (s, want) in [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (150, "2m30s"),
            (599, "9m59s"),
            (600, "10m"),
            (3 * 3600 - 1, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 20 * 60, "3h20m"),
            (8 * 3600, "8h"),
            (47 * 3600, "47h"),
            (48 * 3600, "2d"),
            (76 * 3600, "3d4h"),
            (8 * 86400, "8d"),
            (730 * 86400, "2y"),
            (760 * 86400, "2y30d"),
            (9 * 365 * 86400, "9y"),
        ] {
            assert_eq!(human_duration(s), want, "{s}");
        }
    }
}
