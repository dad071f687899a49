//! The kernel timeline as text (a table per series, then its change points) and as CSV (one
//! row per kernel and point).

use super::{ChangePoint, KernelTimeline, Series};
use crate::columns::{Align, Table};

pub fn count(v: f64) -> String {
    if v.fract() == 0.0 || v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// A change with its sign: `+36`, `-2`, `+0.5`.
pub fn signed(v: f64) -> String {
    if v >= 0.0 {
        format!("+{}", count(v))
    } else {
        count(v)
    }
}

/// How a series is named in headings: `cloud-amd64, no parameters, CPU qemu64, release build`.
pub fn series_name(s: &Series) -> String {
    format!(
        "{}, {}, CPU {}, up to {} operations per window, {} build of osmeter inside",
        if s.flavour.is_empty() {
            "flavour unknown"
        } else {
            &s.flavour
        },
        if s.append.is_empty() {
            "no parameters".to_string()
        } else {
            format!("[{}]", s.append)
        },
        s.cpu.as_deref().unwrap_or("qemu64"),
        s.iterations,
        if s.build.is_empty() {
            "unknown"
        } else {
            &s.build
        }
    )
}

/// One change point on a line: `6.1.0-57 -> 6.12.100  syscall.dup  +19 kernel instructions
/// (+2.1 % of 890)`, then the functions that moved, one a line.
pub fn change_line(c: &ChangePoint) -> String {
    let rel = c.relative.map_or_else(
        || format!("from {}", count(c.before)),
        |r| format!("{:+.1} % of {}", 100.0 * r, count(c.before)),
    );
    let what = c.figure.replace('.', " ");
    let mut out = format!(
        "  {} -> {}: {} {} {what} ({rel})\n",
        c.from,
        c.to,
        c.point,
        signed(c.change())
    );
    match &c.functions {
        Some(f) if f.is_empty() => {
            out.push_str("      (no kernel function moved by half an instruction or more)\n")
        }
        Some(f) => {
            for m in f.iter().take(8) {
                out.push_str(&format!(
                    "      {} in {} ({} -> {})\n",
                    signed(m.after - m.before),
                    m.function,
                    count(m.before),
                    count(m.after)
                ));
            }
            if f.len() > 8 {
                out.push_str(&format!("      ... and {} more function(s)\n", f.len() - 8));
            }
        }
        None => {}
    }
    out
}

fn table(s: &Series) -> String {
    let mut header = vec!["version".to_string()];
    let mut align = vec![Align::Left];
    for p in &s.points {
        header.push(format!("{p} k.ins"));
        header.push("u.ins".into());
        align.extend([Align::Right, Align::Right]);
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = Table::new(&header, &align, 1).grouped(2);
    for k in &s.kernels {
        let mut row = vec![k.version.clone()];
        for c in &k.counts {
            match c {
                Some(c) => row.extend([count(c.kernel_instructions), count(c.user_instructions)]),
                None => row.extend(["-".to_string(), String::new()]),
            }
        }
        t.push(row);
    }
    t.render(crate::columns::width())
}

/// Each series: its heading, the table of counts per operation (kernel and user instructions;
/// `-` where a kernel did not count the point), and its change points.
pub fn render(t: &KernelTimeline) -> String {
    let mut out = String::new();
    for s in &t.series {
        out.push_str(&format!(
            "Kernel timeline: {} ({} kernel(s), oldest first); instructions per operation, \
             exact (QEMU TCG, icount)\n",
            series_name(s),
            s.kernels.len()
        ));
        out.push_str(&table(s));
        out.push('\n');
        if s.change_points.is_empty() {
            out.push_str("No count changed from one kernel to the next.\n\n");
            continue;
        }
        let split = s.change_points.iter().any(|c| c.functions.is_some());
        out.push_str(&format!(
            "Change points: {} (every step where a count changed; its size against the \
             probe's count before{})\n",
            s.change_points.len(),
            if split {
                ", then the kernel functions that moved"
            } else {
                "; runs with --preset split them by kernel function"
            }
        ));
        for c in &s.change_points {
            out.push_str(&change_line(c));
        }
        out.push('\n');
    }
    out
}

fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// One row per kernel and point: the series, the kernel, the point and its two counts.
pub fn csv(t: &KernelTimeline) -> String {
    let mut out = String::from(
        "flavour,append,cpu,build,iterations,version,kernel,point,kernel_instructions,\
         user_instructions\n",
    );
    for s in &t.series {
        for k in &s.kernels {
            for (p, c) in s.points.iter().zip(&k.counts) {
                let Some(c) = c else { continue };
                let fields = [
                    s.flavour.as_str(),
                    s.append.as_str(),
                    s.cpu.as_deref().unwrap_or(""),
                    s.build.as_str(),
                    k.version.as_str(),
                    k.kernel.as_str(),
                    p.as_str(),
                ];
                let mut row: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
                row.insert(4, s.iterations.to_string());
                out.push_str(&format!(
                    "{},{},{}\n",
                    row.join(","),
                    c.kernel_instructions,
                    c.user_instructions
                ));
            }
        }
    }
    out
}
