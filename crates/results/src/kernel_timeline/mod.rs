//! A kernel timeline: each probe's exact counts per kernel version from stored guest runs
//! (`osmeter history --kernels`). Kernels of one kind (flavour, parameters, CPU model, build of
//! the osmeter inside) form a series ordered by version; every step where a count changes is a
//! change point, sized against the probe's own count and split by kernel function where both
//! runs hold the split (`--preset`). Counts in a deterministic guest are exact: no statistics.

pub mod text;

use crate::results::guest::{GuestDoc, KernelParts};
use crate::results::model::Status;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

/// Every series of kernels the stored guest runs hold.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct KernelTimeline {
    pub series: Vec<Series>,
}

/// Kernels of one kind, oldest first.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Series {
    /// The kernel flavour (`cloud-amd64`, `rt-amd64`, `amd64`), empty for a kernel of unknown
    /// flavour (a self-built image).
    pub flavour: String,
    /// The kernel parameters the user added (`--append`), empty when none.
    pub append: String,
    /// QEMU's CPU model; None for QEMU's default (qemu64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    /// The build of the osmeter that ran inside (its loops are part of the user counts).
    pub build: String,
    /// Operations asked for in the shorter counted window: some operations' count per operation
    /// depends on it (`sched_yield` under EEVDF), so runs of other counts are another series.
    pub iterations: u64,
    /// The probes' points, in the columns' order.
    pub points: Vec<String>,
    pub kernels: Vec<KernelCounts>,
    pub change_points: Vec<ChangePoint>,
}

/// One kernel's counts per operation, one entry per point of the series (None: not counted).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct KernelCounts {
    /// The version the series is ordered by (`6.1.0-56`, `6.12.100+deb12`).
    pub version: String,
    /// The kernel as named: a Debian package or an image path.
    pub kernel: String,
    /// The stored runs the counts come from, newest first.
    pub runs: Vec<String>,
    pub counts: Vec<Option<PointCounts>>,
}

/// Instructions per operation, exact.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct PointCounts {
    pub kernel_instructions: f64,
    pub user_instructions: f64,
}

/// A count that differs from the kernel before that counted the same point.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct ChangePoint {
    pub from: String,
    pub to: String,
    pub point: String,
    /// `kernel.instructions` or `user.instructions`.
    pub figure: String,
    pub before: f64,
    pub after: f64,
    /// The change against `before` (0.02 is 2 %); None from a count of zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relative: Option<f64>,
    /// The kernel functions whose instructions per operation moved, largest first; None when
    /// the two runs do not both hold the split by function.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub functions: Option<Vec<FunctionMove>>,
}

impl ChangePoint {
    pub fn change(&self) -> f64 {
        self.after - self.before
    }
}

/// One kernel function's instructions per operation on both sides of a change point.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct FunctionMove {
    pub function: String,
    pub before: f64,
    pub after: f64,
}

/// A stored guest run as the timeline takes it.
pub struct Stored<'a> {
    pub run: &'a str,
    pub doc: &'a GuestDoc,
}

/// Architectures Debian names kernels by; the flavour word before one (`cloud`, `rt`) is part
/// of the flavour.
const ARCHES: &[&str] = &[
    "amd64", "arm64", "686-pae", "686", "armmp", "ppc64el", "s390x",
];
const FLAVOURS: &[&str] = &["cloud", "rt"];

/// A kernel's version and flavour from its release (`uname -r`) or, without one, its name:
/// `6.1.0-56-cloud-amd64` is version `6.1.0-56`, flavour `cloud-amd64`.
pub fn version_and_flavour(doc: &GuestDoc) -> (String, String) {
    let name = doc
        .release
        .clone()
        .unwrap_or_else(|| doc.kernel.trim_start_matches("linux-image-").to_string());
    split_release(&name)
}

pub fn split_release(release: &str) -> (String, String) {
    for arch in ARCHES {
        let Some(rest) = release.strip_suffix(&format!("-{arch}")) else {
            continue;
        };
        for f in FLAVOURS {
            if let Some(v) = rest.strip_suffix(&format!("-{f}")) {
                return (v.to_string(), format!("{f}-{arch}"));
            }
        }
        return (rest.to_string(), arch.to_string());
    }
    (release.to_string(), String::new())
}

/// Whether a point belongs to what the user asked for: a point's label, a probe, or a group
/// (`syscall` for every `syscall.*`); everything when nothing was asked for.
pub fn wanted(point_probe: &str, point: &str, asked: &[String]) -> bool {
    asked.is_empty()
        || asked.iter().any(|a| {
            a == point
                || a == point_probe
                || point_probe
                    .strip_prefix(a.as_str())
                    .is_some_and(|rest| rest.starts_with('.'))
        })
}

type SeriesKey = (String, String, Option<String>, String, u64);

fn series_key(doc: &GuestDoc) -> SeriesKey {
    (
        version_and_flavour(doc).1,
        doc.append.clone(),
        doc.cpu.clone(),
        doc.build.clone(),
        doc.iterations,
    )
}

/// The timeline of `runs` (newest first: a newer run's count of a point wins), restricted to the
/// points `asked` names, each series ordered by `order` on the versions (Debian's comparison,
/// which this layer does not hold), then by kernel name.
pub fn build(
    runs: &[Stored],
    asked: &[String],
    order: &dyn Fn(&str, &str) -> Ordering,
) -> KernelTimeline {
    let mut keys: Vec<SeriesKey> = Vec::new();
    for r in runs {
        let k = series_key(r.doc);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut series: Vec<Series> = keys
        .into_iter()
        .filter_map(|k| {
            let members: Vec<&Stored> = runs.iter().filter(|r| series_key(r.doc) == k).collect();
            one_series(k, &members, asked, order)
        })
        .collect();
    series.sort_by(|a, b| {
        (&a.flavour, &a.append, &a.cpu, &a.build, b.iterations).cmp(&(
            &b.flavour,
            &b.append,
            &b.cpu,
            &b.build,
            a.iterations,
        ))
    });
    KernelTimeline { series }
}

/// What one kernel of a series holds, before it is written out: the count and the split by
/// function of each point.
struct Kernel<'a> {
    version: String,
    kernel: String,
    runs: Vec<String>,
    points: Vec<(String, PointCounts, Option<&'a KernelParts>)>,
}

fn one_series(
    (flavour, append, cpu, build, iterations): SeriesKey,
    members: &[&Stored],
    asked: &[String],
    order: &dyn Fn(&str, &str) -> Ordering,
) -> Option<Series> {
    let mut kernels: Vec<Kernel> = Vec::new();
    let mut points: Vec<String> = Vec::new();
    for r in members {
        let version = version_and_flavour(r.doc).0;
        let at = match kernels
            .iter()
            .position(|k| k.version == version && k.kernel == r.doc.kernel)
        {
            Some(i) => i,
            None => {
                kernels.push(Kernel {
                    version,
                    kernel: r.doc.kernel.clone(),
                    runs: Vec::new(),
                    points: Vec::new(),
                });
                kernels.len() - 1
            }
        };
        let k = &mut kernels[at];
        for p in r.doc.probes.iter().filter(|p| p.status == Status::Ok) {
            let (label, Some(c)) = (p.label(), p.per_op) else {
                continue;
            };
            if !wanted(&p.probe, &label, asked) {
                continue;
            }
            let counts = PointCounts {
                kernel_instructions: c.kernel.instructions,
                user_instructions: c.user.instructions,
            };
            match k.points.iter_mut().find(|(l, _, _)| *l == label) {
                // A newer run counted it already; an older one may still hold its split.
                Some((_, held, parts @ None)) if *held == counts => {
                    *parts = p.kernel_parts.as_ref()
                }
                Some(_) => continue,
                None => k
                    .points
                    .push((label.clone(), counts, p.kernel_parts.as_ref())),
            }
            if !k.runs.iter().any(|x| x == r.run) {
                k.runs.push(r.run.to_string());
            }
            if !points.contains(&label) {
                points.push(label);
            }
        }
    }
    kernels.retain(|k| !k.points.is_empty());
    if kernels.is_empty() {
        return None;
    }
    kernels.sort_by(|a, b| order(&a.version, &b.version).then_with(|| a.kernel.cmp(&b.kernel)));
    points.sort();
    let change_points = changes(&kernels, &points);
    Some(Series {
        flavour,
        append,
        cpu,
        build,
        iterations,
        kernels: kernels
            .iter()
            .map(|k| KernelCounts {
                version: k.version.clone(),
                kernel: k.kernel.clone(),
                runs: k.runs.clone(),
                counts: points
                    .iter()
                    .map(|p| k.points.iter().find(|(l, _, _)| l == p).map(|x| x.1))
                    .collect(),
            })
            .collect(),
        points,
        change_points,
    })
}

/// Every count that differs from the one of the last kernel before that counted the point.
fn changes(kernels: &[Kernel], points: &[String]) -> Vec<ChangePoint> {
    let mut out = Vec::new();
    for point in points {
        let mut last: Option<(&Kernel, PointCounts, Option<&KernelParts>)> = None;
        for k in kernels {
            let Some((_, now, parts)) = k.points.iter().find(|(l, _, _)| l == point) else {
                continue;
            };
            if let Some((prev, was, was_parts)) = last {
                out.extend(between(prev, k, point, (was, *now), (was_parts, *parts)));
            }
            last = Some((k, *now, *parts));
        }
    }
    let at = |v: &str| kernels.iter().position(|k| k.version == v);
    out.sort_by_key(|c: &ChangePoint| (at(&c.to), c.point.clone(), c.figure.clone()));
    out
}

fn between(
    a: &Kernel,
    b: &Kernel,
    point: &str,
    (x, y): (PointCounts, PointCounts),
    (pa, pb): (Option<&KernelParts>, Option<&KernelParts>),
) -> Vec<ChangePoint> {
    let mut out = Vec::new();
    for (figure, before, after) in [
        (
            "kernel.instructions",
            x.kernel_instructions,
            y.kernel_instructions,
        ),
        (
            "user.instructions",
            x.user_instructions,
            y.user_instructions,
        ),
    ] {
        if before == after {
            continue;
        }
        let functions = match (figure, pa, pb) {
            ("kernel.instructions", Some(pa), Some(pb)) => Some(moved_functions(pa, pb)),
            _ => None,
        };
        out.push(ChangePoint {
            from: a.version.clone(),
            to: b.version.clone(),
            point: point.to_string(),
            figure: figure.to_string(),
            before,
            after,
            relative: (before != 0.0).then(|| (after - before) / before),
            functions,
        });
    }
    out
}

/// The functions whose instructions per operation differ by at least half an instruction,
/// largest change first.
pub fn moved_functions(a: &KernelParts, b: &KernelParts) -> Vec<FunctionMove> {
    let mut names: Vec<&String> = a.functions.keys().chain(b.functions.keys()).collect();
    names.sort();
    names.dedup();
    let mut out: Vec<FunctionMove> = names
        .into_iter()
        .map(|f| FunctionMove {
            function: f.clone(),
            before: a.functions.get(f).copied().unwrap_or(0.0),
            after: b.functions.get(f).copied().unwrap_or(0.0),
        })
        .filter(|m| (m.after - m.before).abs() >= 0.5)
        .collect();
    out.sort_by(|x, y| {
        (y.after - y.before)
            .abs()
            .total_cmp(&(x.after - x.before).abs())
            .then_with(|| x.function.cmp(&y.function))
    });
    out
}

#[cfg(test)]
mod tests;
