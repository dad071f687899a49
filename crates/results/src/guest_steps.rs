//! The steps of a sweep: where a count per operation changes from one kernel to the next. Counts
//! in a deterministic guest are exact, so every step is a change point without statistics; its
//! size is told against the count itself, so that +2 on 300 and +2 on 500000 read differently.

use crate::results::guest::{side_label, GuestDoc};
use crate::results::model::Status;

/// One count that differs between two neighbouring guests.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub from: String,
    pub to: String,
    /// The probe's point, e.g. `fs.open_close depth=1`.
    pub point: String,
    /// `kernel.instructions` or `user.instructions`.
    pub figure: String,
    pub before: f64,
    pub after: f64,
}

impl Step {
    /// The change against the earlier count; None from a count of zero.
    pub fn relative(&self) -> Option<f64> {
        (self.before != 0.0).then(|| (self.after - self.before) / self.before)
    }
}

/// The instruction counts (user and kernel) that change between each guest and the next, in the
/// order given; points counted on one side only are not steps.
pub fn steps(docs: &[&GuestDoc]) -> Vec<Step> {
    let mut out = Vec::new();
    for pair in docs.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        for pa in a.probes.iter().filter(|p| p.status == Status::Ok) {
            let Some(pb) = b
                .probes
                .iter()
                .find(|p| p.status == Status::Ok && p.probe == pa.probe && p.params == pa.params)
            else {
                continue;
            };
            let (Some(ca), Some(cb)) = (pa.per_op, pb.per_op) else {
                continue;
            };
            for (mode, x, y) in [
                ("kernel", ca.kernel.instructions, cb.kernel.instructions),
                ("user", ca.user.instructions, cb.user.instructions),
            ] {
                if x != y {
                    out.push(Step {
                        from: side_label(a),
                        to: side_label(b),
                        point: pa.label(),
                        figure: format!("{mode}.instructions"),
                        before: x,
                        after: y,
                    });
                }
            }
        }
    }
    out
}

/// The steps as lines under the table, grouped by the pair of kernels; an empty text when the
/// sweep has fewer than three guests (two are a comparison: `compare` says it all).
pub fn render(docs: &[&GuestDoc]) -> String {
    if docs.len() < 3 {
        return String::new();
    }
    let all = steps(docs);
    let mut out = format!(
        "Steps between neighbouring kernels: {} instruction count(s) changed (exact counts: \
         every step is a change point; % of the earlier count)\n",
        all.len()
    );
    let mut pair = None;
    for s in &all {
        if pair != Some((&s.from, &s.to)) {
            out.push_str(&format!("  {} -> {}\n", s.from, s.to));
            pair = Some((&s.from, &s.to));
        }
        let rel = s
            .relative()
            .map_or("new".to_string(), |r| format!("{:+.1} %", 100.0 * r));
        out.push_str(&format!(
            "    {:<40} {:>10} -> {:<10} {:>+9} {:>9}\n",
            format!("{} {}", s.point, s.figure),
            crate::units::number(s.before),
            crate::units::number(s.after),
            s.after - s.before,
            rel
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::guest::tests::doc;

    #[test]
    fn every_changed_count_is_a_step_sized_against_the_count() {
        let (a, b, c) = (
            doc("6.1.0-56", 307.0),
            doc("6.1.0-57", 307.0),
            doc("6.12.100", 309.0),
        );
        assert!(steps(&[&a, &b]).is_empty());
        let s = steps(&[&a, &b, &c]);
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(
            (s[0].from.as_str(), s[0].to.as_str()),
            ("6.1.0-57", "6.12.100")
        );
        assert_eq!(s[0].figure, "kernel.instructions");
        assert!((s[0].relative().unwrap() - 2.0 / 307.0).abs() < 1e-12);
        let text = render(&[&a, &b, &c]);
        assert!(text.contains("1 instruction count(s) changed"), "{text}");
        assert!(text.contains("  6.1.0-57 -> 6.12.100\n"), "{text}");
        assert!(text.contains("+2") && text.contains("+0.7 %"), "{text}");
        assert_eq!(render(&[&a, &c]), "");
    }
}
