//! The latency document (`osmeter.latency/1`) and its table.

use super::accounting::{fit_gumbel, summarise_windows, Accounting, WINDOWS};
use super::buffer::{evaluate, format_seconds, BufferResult};
use super::histogram::Histogram;
use super::threads::StreamResult;
use serde::Serialize;
use serde_json::{json, Value};

pub const LATENCY_SCHEMA: &str = "osmeter.latency/1";

#[derive(Debug, Clone, Serialize)]
pub struct Distribution {
    pub count: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p99_9_ns: u64,
    pub p99_99_ns: u64,
    pub max_ns: u64,
}

pub fn distribution(h: &Histogram) -> Distribution {
    Distribution {
        count: h.count(),
        mean_ns: h.mean(),
        p50_ns: h.percentile(0.5),
        p90_ns: h.percentile(0.9),
        p99_ns: h.percentile(0.99),
        p99_9_ns: h.percentile(0.999),
        p99_99_ns: h.percentile(0.9999),
        max_ns: h.max(),
    }
}

/// Everything about one stream; `measured_ns` is the wall time the periods covered.
pub fn stream_doc(r: &StreamResult) -> Value {
    let a: &Accounting = &r.acct;
    let measured_ns = a.periods() * a.period_ns;
    let mut windows = Vec::new();
    let mut estimate = json!({"unavailable": "no complete 1 s window"});
    for w in &a.windows {
        let maxima = a.complete_window_maxima(w);
        if let Some(s) = summarise_windows(w.name, &maxima) {
            windows.push(s);
        }
        if w.name == WINDOWS[0].0 {
            estimate = match fit_gumbel(w.name, w.width_ns as f64 / 1e9, &maxima) {
                Ok(fit) => json!({"label": "estimate (Gumbel fit of window maxima)", "fit": fit}),
                Err(why) => json!({ "unavailable": why }),
            };
        }
    }
    let buffers: Vec<BufferResult> = a
        .buffers
        .iter()
        .map(|(c, t)| evaluate(c, t, measured_ns))
        .collect();
    let histogram: Vec<[u64; 3]> = a
        .corrected
        .buckets()
        .map(|b| [b.low_ns, b.high_ns, b.count])
        .collect();
    json!({
        "class": r.spec.class.name,
        "policy": if r.spec.class.fifo.is_some() { "SCHED_FIFO" } else { "SCHED_OTHER" },
        "priority": r.spec.class.fifo,
        "path": r.spec.path.name(),
        "cpu": r.spec.cpu,
        "error": r.error,
        "periods_planned": r.periods_planned,
        "periods": a.periods(),
        "woken": a.woken,
        "missed": a.missed,
        "measured_s": measured_ns as f64 / 1e9,
        "cpu_time_ms": r.cpu_ns as f64 / 1e6,
        "raw": distribution(&a.raw),
        "corrected": distribution(&a.corrected),
        "histogram_corrected": {"columns": ["low_ns", "high_ns", "count"], "buckets": histogram},
        "windows": windows,
        "estimate": estimate,
        "buffers": buffers,
    })
}

fn us(ns: u64) -> String {
    let v = ns as f64 / 1e3;
    if v < 10.0 {
        format!("{v:.2}")
    } else if v < 1000.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

fn label(s: &Value) -> String {
    format!(
        "{}/{} cpu{}",
        s["class"].as_str().unwrap_or("?"),
        s["path"].as_str().unwrap_or("?"),
        s["cpu"]
    )
}

/// The human-readable report of a latency document.
pub fn render(doc: &Value) -> String {
    let mut out = String::new();
    let streams = doc["streams"].as_array().cloned().unwrap_or_default();
    out.push_str(&format!(
        "Wakeup latency, period {} us, {} s{}; microseconds, missed periods included (corrected)\n\n",
        doc["period_ns"].as_u64().unwrap_or(0) / 1000,
        doc["measured_s"].as_f64().unwrap_or(0.0),
        if doc["interrupted"].as_bool() == Some(true) {
            " (interrupted)"
        } else {
            ""
        }
    ));
    out.push_str(&format!(
        "{:<24} {:>9} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}\n",
        "class/path", "woken", "missed", "p50", "p90", "p99", "p99.9", "p99.99", "max", "raw max"
    ));
    for s in &streams {
        if let Some(e) = s["error"].as_str() {
            out.push_str(&format!("{:<24} failed: {e}\n", label(s)));
            continue;
        }
        let c = &s["corrected"];
        let g = |k: &str| us(c[k].as_u64().unwrap_or(0));
        out.push_str(&format!(
            "{:<24} {:>9} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}\n",
            label(s),
            s["woken"].as_u64().unwrap_or(0),
            s["missed"].as_u64().unwrap_or(0),
            g("p50_ns"),
            g("p90_ns"),
            g("p99_ns"),
            g("p99_9_ns"),
            g("p99_99_ns"),
            g("max_ns"),
            us(s["raw"]["max_ns"].as_u64().unwrap_or(0)),
        ));
    }
    if let Some(loads) = doc["loads"].as_array().filter(|a| !a.is_empty()) {
        out.push_str("\nLoad (normal priority):\n");
        for l in loads {
            let name = l["load"].as_str().unwrap_or("?");
            match (l["error"].as_str(), l["unit"].as_str().unwrap_or("")) {
                (Some(e), _) => out.push_str(&format!("  {name}: {e}\n")),
                (None, "") => out.push_str(&format!("  {name}\n")),
                (None, unit) => out.push_str(&format!(
                    "  {name:<8} {:>12.4e} {unit} ({} threads)\n",
                    l["rate"].as_f64().unwrap_or(0.0),
                    l["threads"].as_u64().unwrap_or(0)
                )),
            }
        }
    }
    if let Some(skipped) = doc["skipped"].as_array().filter(|a| !a.is_empty()) {
        out.push('\n');
        for k in skipped {
            out.push_str(&format!(
                "skipped {}: {}\n",
                k["class"].as_str().unwrap_or("?"),
                k["reason"].as_str().unwrap_or("")
            ));
        }
    }

    if let Some(eps) = doc["episodes"].as_array() {
        out.push_str(&format!(
            "\nCause capture: {} episode(s) over the threshold\n",
            eps.len()
        ));
        for e in eps {
            out.push_str(e["summary"].as_str().unwrap_or(""));
        }
    }
    out.push_str("\nWorst case per window (us): min / median / p90 / max of the window maxima\n");
    for s in &streams {
        for w in s["windows"].as_array().into_iter().flatten() {
            out.push_str(&format!(
                "  {:<24} {:>5} x{:<6} {} / {} / {} / {}\n",
                label(s),
                w["window"].as_str().unwrap_or(""),
                w["windows"].as_u64().unwrap_or(0),
                us(w["min_ns"].as_u64().unwrap_or(0)),
                us(w["p50_ns"].as_u64().unwrap_or(0)),
                us(w["p90_ns"].as_u64().unwrap_or(0)),
                us(w["max_ns"].as_u64().unwrap_or(0)),
            ));
        }
    }

    out.push_str(
        "\nEstimated worst case (Gumbel fit of 1 s maxima; an estimate, not a measurement)\n",
    );
    for s in &streams {
        let e = &s["estimate"];
        if let Some(why) = e["unavailable"].as_str() {
            out.push_str(&format!("  {:<24} not estimated: {why}\n", label(s)));
            continue;
        }
        let fit = &e["fit"];
        let parts: Vec<String> = fit["estimates"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|h| {
                format!(
                    "{} {} (1% above {})",
                    h["horizon"].as_str().unwrap_or(""),
                    us(h["median_ns"].as_f64().unwrap_or(0.0) as u64),
                    us(h["p99_ns"].as_f64().unwrap_or(0.0) as u64)
                )
            })
            .collect();
        out.push_str(&format!(
            "  {:<24} {}; fit KS distance {:.2}\n",
            label(s),
            parts.join(", "),
            fit["ks_distance"].as_f64().unwrap_or(f64::NAN)
        ));
    }

    out.push_str(
        "\nBuffer model: mean time to underrun (t period, n buffers, c compute; tolerates (n-1)t-c)\n",
    );
    let ok: Vec<&Value> = streams.iter().filter(|s| s["error"].is_null()).collect();
    if let Some(first) = ok.first() {
        out.push_str(&format!(
            "{:>5} {:>2} {:>6} {:>7}",
            "t ms", "n", "c ms", "tol ms"
        ));
        for s in &ok {
            out.push_str(&format!(" {:>22}", label(s)));
        }
        out.push('\n');
        let rows = first["buffers"].as_array().map(Vec::len).unwrap_or(0);
        for i in 0..rows {
            let b = &first["buffers"][i];
            let f = |k: &str| b[k].as_f64().unwrap_or(0.0);
            out.push_str(&format!(
                "{:>5} {:>2} {:>6} {:>7}",
                f("period_ms"),
                b["buffers"].as_u64().unwrap_or(0),
                f("compute_ms"),
                f("tolerance_ms")
            ));
            for s in &ok {
                let r = &s["buffers"][i];
                let cell = match r["mttf_s"].as_f64() {
                    Some(v) => format!(
                        "{} (p {:.1e})",
                        format_seconds(v),
                        r["p_underrun"].as_f64().unwrap_or(0.0)
                    ),
                    None => format!(
                        "> {}",
                        format_seconds(r["mttf_more_than_s"].as_f64().unwrap_or(0.0))
                    ),
                };
                out.push_str(&format!(" {cell:>22}"));
            }
            out.push('\n');
        }
        out.push_str("(\"> X\": no underrun seen; the MTTF is more than the measured duration)\n");
    }
    out
}
