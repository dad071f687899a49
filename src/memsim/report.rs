//! The `osmeter.memsim/1` document and its table.
//!
//! MCPI follows Chen and Bershad: stall cycles over instructions. `mcpi.user` and `mcpi.system`
//! divide each mode's stalls by ALL instructions, so they add up to `mcpi.total` and stack into one
//! bar; `own_mcpi` divides by the mode's own instructions (the paper's S-MCPI).

use super::machine::{CacheCounts, MachineConfig, ModeStats, Stats, CLASSES, COMPONENTS};
use super::sweep::SweepResult;
use serde_json::{json, Map, Value};

pub const SCHEMA: &str = "osmeter.memsim/1";

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn mcpi(m: &ModeStats, instr: u64) -> Value {
    let mut o = Map::new();
    for (name, s) in COMPONENTS.iter().zip(m.stall) {
        o.insert(name.to_string(), json!(ratio(s, instr)));
    }
    o.insert("total".into(), json!(ratio(m.stall.iter().sum(), instr)));
    Value::Object(o)
}

fn rates(c: &CacheCounts) -> Value {
    json!({
        "accesses": c.accesses,
        "misses": c.misses,
        "miss_rate": ratio(c.misses, c.accesses),
        "read_misses": c.read_misses,
        "write_misses": c.write_misses,
        "writebacks": c.writebacks,
        "classes": CLASSES.iter().zip(c.classes).map(|(n, v)| (n.to_string(), json!(v))).collect::<Map<_, _>>(),
    })
}

fn mode_doc(m: &ModeStats, cfg: &MachineConfig) -> Value {
    let mut caches = Map::new();
    caches.insert("l1i".into(), rates(&m.l1i));
    caches.insert("l1d".into(), rates(&m.l1d));
    for (i, c) in m.lower.iter().enumerate() {
        caches.insert(format!("l{}", i + 2), rates(c));
    }
    json!({
        "instructions": m.instructions,
        "reads": m.reads,
        "writes": m.writes,
        "uncached": m.uncached,
        "stall_cycles": COMPONENTS.iter().zip(m.stall).map(|(n, v)| (n.to_string(), json!(v))).collect::<Map<_, _>>(),
        "caches": caches,
        "tlb": {"refs": m.tlb_refs, "misses": m.tlb_misses, "miss_rate": ratio(m.tlb_misses, m.tlb_refs),
                "present": cfg.tlb.is_some()},
        "write_buffer": {"writes": m.wbuf_writes, "merged": m.wbuf_merges, "full_stalls": m.wbuf_full_stalls, "read_waits": m.wbuf_read_waits},
    })
}

pub fn machine_doc(cfg: &MachineConfig, s: &Stats) -> Value {
    let [u, k] = &s.mode;
    let all = u.instructions + k.instructions;
    let mut total = u.clone();
    for (t, x) in total.stall.iter_mut().zip(k.stall) {
        *t += x;
    }
    json!({
        "name": cfg.name,
        "config": cfg,
        "instructions": all,
        "system_fraction": ratio(k.instructions, all),
        "mcpi": {"user": mcpi(u, all), "system": mcpi(k, all), "total": mcpi(&total, all)},
        "own_mcpi": {"user": mcpi(u, u.instructions), "system": mcpi(k, k.instructions)},
        "user": mode_doc(u, cfg),
        "system": mode_doc(k, cfg),
        "by_address_space": s.by_asid.iter().map(|(a, v)| json!({
            "asid": a, "instructions": v.instructions, "stall_cycles": v.stall,
            "mcpi": ratio(v.stall, v.instructions)})).collect::<Vec<_>>(),
    })
}

pub fn document(trace: Value, cfgs: &[MachineConfig], r: &SweepResult) -> Value {
    json!({
        "schema": SCHEMA,
        "trace": trace,
        "references": r.refs,
        "user_only": r.meta.user_only(),
        "incomplete": r.meta.incomplete(),
        "seconds": r.seconds,
        "references_per_second": if r.seconds > 0.0 { r.refs as f64 / r.seconds } else { 0.0 },
        "machines": cfgs.iter().zip(&r.stats).map(|(c, s)| machine_doc(c, s)).collect::<Vec<_>>(),
    })
}

fn f(v: &Value, path: &[&str]) -> f64 {
    let mut v = v;
    for p in path {
        v = &v[*p];
    }
    v.as_f64().unwrap_or(0.0)
}

/// The paper's table: MCPI by component, user and system side by side, then miss rates and 3C.
pub fn render(doc: &Value) -> String {
    let mut out = String::new();
    let refs = doc["references"].as_u64().unwrap_or(0);
    out.push_str(&format!("{} references", refs));
    if doc["user_only"].as_bool() == Some(true) {
        out.push_str(" (user mode only: the capture saw no kernel references)");
    }
    if doc["incomplete"].as_bool() == Some(true) {
        out.push_str(" (INCOMPLETE trace: the capture ended early)");
    }
    out.push('\n');
    for m in doc["machines"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "\n{}: {} instructions, {:.1}% system\n",
            m["name"].as_str().unwrap_or("?"),
            m["instructions"],
            100.0 * f(m, &["system_fraction"])
        ));
        out.push_str(&format!(
            "  {:<10} {:>9} {:>9} {:>9}\n",
            "MCPI", "user", "system", "total"
        ));
        for c in COMPONENTS.iter().chain(["total"].iter()) {
            out.push_str(&format!(
                "  {:<10} {:>9.4} {:>9.4} {:>9.4}\n",
                c,
                f(m, &["mcpi", "user", c]),
                f(m, &["mcpi", "system", c]),
                f(m, &["mcpi", "total", c])
            ));
        }
        out.push_str(&format!(
            "  {:<10} {:>9.4} {:>9.4}   (stalls per own instruction)\n",
            "own MCPI",
            f(m, &["own_mcpi", "user", "total"]),
            f(m, &["own_mcpi", "system", "total"])
        ));
        out.push_str(&format!(
            "  {:<10} {:>9} {:>9}   {}\n",
            "miss rate", "user", "system", "3C of all misses: compulsory/capacity/conflict"
        ));
        let caches = m["user"]["caches"].as_object().cloned().unwrap_or_default();
        for name in caches.keys() {
            let u = &m["user"]["caches"][name];
            let s = &m["system"]["caches"][name];
            if u["accesses"].as_u64().unwrap_or(0) + s["accesses"].as_u64().unwrap_or(0) == 0 {
                continue;
            }
            let classes: Vec<u64> = CLASSES
                .iter()
                .map(|c| {
                    u["classes"][c].as_u64().unwrap_or(0) + s["classes"][c].as_u64().unwrap_or(0)
                })
                .collect();
            let all: u64 = classes.iter().sum();
            let three_c = if all == 0 {
                String::new()
            } else {
                classes
                    .iter()
                    .map(|&c| format!("{:.0}%", 100.0 * ratio(c, all)))
                    .collect::<Vec<_>>()
                    .join("/")
            };
            out.push_str(&format!(
                "  {:<10} {:>8.3}% {:>8.3}%   {}\n",
                name,
                100.0 * f(u, &["miss_rate"]),
                100.0 * f(s, &["miss_rate"]),
                three_c
            ));
        }
        if m["user"]["tlb"]["present"].as_bool() == Some(true) {
            out.push_str(&format!(
                "  {:<10} {:>8.3}% {:>8.3}%\n",
                "tlb",
                100.0 * f(m, &["user", "tlb", "miss_rate"]),
                100.0 * f(m, &["system", "tlb", "miss_rate"])
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memsim::config::preset;
    use crate::memsim::sweep::simulate;
    use crate::memsim::trace::synth::Synth;

    #[test]
    fn user_and_system_mcpi_add_up_to_the_total() {
        let cfg = preset("ds5000-200").unwrap();
        let r = simulate(&mut Synth::new(200_000, 1), std::slice::from_ref(&cfg), 1).unwrap();
        let doc = document(json!({"path": "synth"}), &[cfg], &r);
        let m = &doc["machines"][0];
        for c in COMPONENTS.iter().chain(["total"].iter()) {
            let sum = f(m, &["mcpi", "user", c]) + f(m, &["mcpi", "system", c]);
            assert!((sum - f(m, &["mcpi", "total", c])).abs() < 1e-12, "{c}");
        }
        assert!(f(m, &["mcpi", "system", "total"]) > 0.0);
        assert_eq!(doc["schema"], SCHEMA);
        let text = render(&doc);
        assert!(text.contains("ds5000-200") && text.contains("wbuffer") && text.contains("l1d"));
    }
}
