//! The memsim document as the paper's table: MCPI by component, user and system side by side,
//! then miss rates and 3C classes.

use super::document::MemsimDoc;

pub fn render(doc: &MemsimDoc) -> String {
    let mut out = String::new();
    out.push_str(&format!("{} references", doc.references));
    if doc.user_only {
        out.push_str(" (user mode only: the capture saw no kernel references)");
    }
    if doc.incomplete {
        out.push_str(" (INCOMPLETE trace: the capture ended early)");
    }
    out.push('\n');
    for m in &doc.machines {
        out.push_str(&format!(
            "\n{}: {} instructions, {:.1}% system\n",
            m.name,
            m.instructions,
            100.0 * m.system_fraction
        ));
        out.push_str(&format!(
            "  {:<10} {:>9} {:>9} {:>9}\n",
            "MCPI", "user", "system", "total"
        ));
        let rows = m
            .mcpi
            .user
            .by_name()
            .into_iter()
            .zip(m.mcpi.system.by_name())
            .zip(m.mcpi.total.by_name());
        for (((name, u), (_, s)), (_, t)) in rows {
            out.push_str(&format!("  {name:<10} {u:>9.4} {s:>9.4} {t:>9.4}\n"));
        }
        out.push_str(&format!(
            "  {:<10} {:>9.4} {:>9.4}   (stalls per own instruction)\n",
            "own MCPI", m.own_mcpi.user.total, m.own_mcpi.system.total
        ));
        out.push_str(&format!(
            "  {:<10} {:>9} {:>9}   {}\n",
            "miss rate", "user", "system", "3C of all misses: compulsory/capacity/conflict"
        ));
        for c in m.caches_both() {
            let three_c = c.class_shares().map_or(String::new(), |shares| {
                shares.map(|x| format!("{:.0}%", 100.0 * x)).join("/")
            });
            out.push_str(&format!(
                "  {:<10} {:>8.3}% {:>8.3}%   {}\n",
                c.name,
                100.0 * c.user.miss_rate,
                100.0 * c.system.miss_rate,
                three_c
            ));
        }
        if m.user.tlb.present {
            out.push_str(&format!(
                "  {:<10} {:>8.3}% {:>8.3}%\n",
                "tlb",
                100.0 * m.user.tlb.miss_rate,
                100.0 * m.system.tlb.miss_rate
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memsim::config::preset;
    use crate::memsim::document::TraceRef;
    use crate::memsim::sweep::simulate;
    use crate::memsim::trace::synth::Synth;

    #[test]
    fn user_and_system_mcpi_add_up_to_the_total() {
        let cfg = preset("ds5000-200").unwrap();
        let r = simulate(&mut Synth::new(200_000, 1), std::slice::from_ref(&cfg), 1).unwrap();
        let trace = TraceRef {
            path: "synth".into(),
            format: None,
        };
        let doc = MemsimDoc::new(trace, &[cfg], &r);
        let m = &doc.machines[0];
        let (u, s, t) = (
            m.mcpi.user.by_name(),
            m.mcpi.system.by_name(),
            m.mcpi.total.by_name(),
        );
        for i in 0..u.len() {
            assert!((u[i].1 + s[i].1 - t[i].1).abs() < 1e-12, "{}", u[i].0);
        }
        assert!(m.mcpi.system.total > 0.0);
        assert_eq!(doc.schema, crate::memsim::document::SCHEMA);
        let back: MemsimDoc = serde_json::from_str(&serde_json::to_string(&doc).unwrap()).unwrap();
        assert_eq!(back, doc, "the document reads back as the same value");
        let text = render(&doc);
        assert!(text.contains("ds5000-200") && text.contains("wbuffer") && text.contains("l1d"));
        let l1i = text.find("  l1i").unwrap();
        assert!(l1i < text.find("  l1d").unwrap(), "levels in order: {text}");
    }
}
