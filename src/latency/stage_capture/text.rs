//! The stage tables `latency --stages` prints: a heading, then per stream its wakes split into
//! interrupt, softirq, handler, thread and return to user, and what tracing added.

use super::{StageCaptureInfo, StreamStages};

/// The heading of the stage tables.
pub fn render_header(info: &StageCaptureInfo) -> String {
    let phases = match info.phase_ms {
        Some(ms) => format!("; traced and untraced phases of {ms} ms alternate"),
        None => String::new(),
    };
    let lost = if info.lost_events > 0 {
        format!("; {} events lost", info.lost_events)
    } else {
        String::new()
    };
    format!(
        "\nStages of the timer wakes, from kernel timestamps (us): p50 / p99 / max, share of the \
         mean{phases}{lost}\n"
    )
}

/// One stream's stages as the table prints them.
pub fn render(label: &str, s: &StreamStages) -> String {
    let mut out = format!(
        "  {label}: {} of {} traced wakes split{}\n",
        s.with_stages,
        s.traced_wakes,
        if s.incomplete > 0 {
            format!(" ({} with events missing)", s.incomplete)
        } else {
            String::new()
        }
    );
    if let Some(st) = &s.stages {
        let rows = [
            ("interrupt", Some(&st.interrupt)),
            ("softirq", st.softirq.as_ref()),
            ("handler", Some(&st.handler)),
            ("thread", Some(&st.thread)),
            ("to_user", Some(&st.to_user)),
        ];
        for (name, stats) in rows {
            let Some(x) = stats else { continue };
            out.push_str(&format!(
                "    {name:<10} {:>8} / {:>8} / {:>9}  {:>3.0} %\n",
                crate::units::number(x.dist.p50_ns as f64 / 1e3),
                crate::units::number(x.dist.p99_ns as f64 / 1e3),
                crate::units::number(x.dist.max_ns as f64 / 1e3),
                x.mean_share * 100.0
            ));
        }
        out.push_str(&format!(
            "    {:<10} {:>8} / {:>8} / {:>9}\n",
            "total",
            crate::units::number(st.total.dist.p50_ns as f64 / 1e3),
            crate::units::number(st.total.dist.p99_ns as f64 / 1e3),
            crate::units::number(st.total.dist.max_ns as f64 / 1e3)
        ));
    }
    if let Some(o) = s.overhead.as_ref().filter(|o| !o.measured()) {
        out.push_str(&format!(
            "    overhead: not measured ({} traced and {} untraced wakes; each phase needs some)\n",
            o.traced_wakes, o.untraced_wakes
        ));
    } else if let Some(o) = &s.overhead {
        out.push_str(&format!(
            "    overhead: median wake {} us traced, {} us untraced ({:+.1} us), {:.1} events per \
             wake\n",
            crate::units::number(o.traced_p50_ns as f64 / 1e3),
            crate::units::number(o.untraced_p50_ns as f64 / 1e3),
            o.added_p50_ns as f64 / 1e3,
            o.events_per_wake
        ));
    }
    out
}
