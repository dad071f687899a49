//! The kernels of a guest request before anything boots: `--guest` values expanded (paths,
//! packages, patterns and ranges over the archive's packages, oldest first), listed by
//! `--dry-run`, fetched together into the cache and held under `--cache-max`.

use crate::capture::system::{archive, kernel, kernel_cache};
use crate::usage;
use anyhow::Result;
use std::path::Path;

/// A kernel of the request, as named, before it is fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// An image file.
    Path(String),
    /// A concrete Debian package, with its version and download size where the archive said.
    Package {
        name: String,
        version: Option<String>,
        size: u64,
    },
}

impl Source {
    pub fn label(&self) -> &str {
        match self {
            Source::Path(p) => p,
            Source::Package { name, .. } => name,
        }
    }
}

/// Whether a `--guest` value names a file (anything with a `/`, or an existing file) rather than
/// a Debian package.
pub fn is_path(spec: &str) -> bool {
    spec.contains('/') || Path::new(spec).is_file()
}

/// Every `--guest` value as the kernels it names; a kernel named twice boots once. Without a
/// pattern they keep the order given; with one, every package of every value is placed by its
/// Debian version (then by name), so that several patterns read as one history, and image
/// files keep their places.
pub fn expand(specs: &[String]) -> Result<Vec<Source>> {
    let mut out = expand_each(specs)?;
    if specs.iter().any(|s| !is_path(s) && archive::is_pattern(s)) {
        for s in out.iter_mut() {
            if let Source::Package {
                name,
                version: version @ None,
                size,
            } = s
            {
                if let Some(c) = archive::describe(name)? {
                    *version = Some(c.version);
                    *size = c.size;
                }
            }
        }
        by_version(&mut out);
    }
    Ok(out)
}

/// Packages with a version sorted among the places they hold, oldest first (then by name);
/// image files and packages the archive gave no version for stay where they are.
pub fn by_version(sources: &mut [Source]) {
    let places: Vec<usize> = (0..sources.len())
        .filter(|&i| {
            matches!(
                &sources[i],
                Source::Package {
                    version: Some(_),
                    ..
                }
            )
        })
        .collect();
    let mut packages: Vec<Source> = places.iter().map(|&i| sources[i].clone()).collect();
    let key = |s: &Source| match s {
        Source::Package {
            version: Some(v), ..
        } => v.clone(),
        _ => String::new(),
    };
    packages.sort_by(|a, b| {
        crate::capture::system::debver::compare(&key(a), &key(b))
            .then_with(|| a.label().cmp(b.label()))
    });
    for (i, s) in places.into_iter().zip(packages) {
        sources[i] = s;
    }
}

/// Each `--guest` value as the kernels it names, in the order given.
fn expand_each(specs: &[String]) -> Result<Vec<Source>> {
    let mut out: Vec<Source> = Vec::new();
    for spec in specs {
        let found = if is_path(spec) {
            vec![Source::Path(spec.clone())]
        } else if archive::is_pattern(spec) {
            archive::resolve(spec)?
                .into_iter()
                .map(|c| Source::Package {
                    name: c.name,
                    version: Some(c.version),
                    size: c.size,
                })
                .collect()
        } else {
            let name =
                kernel::resolve_package(spec).map_err(|e| usage!("--guest {spec}: {e:#}"))?;
            vec![Source::Package {
                name,
                version: None,
                size: 0,
            }]
        };
        for s in found {
            if !out.iter().any(|o| o.label() == s.label()) {
                out.push(s);
            }
        }
    }
    Ok(out)
}

/// What `--dry-run` prints: the kernels in the order they would boot, each one's download and
/// whether the cache holds it already, and what the cache holds against its bound.
pub fn dry_run(sources: &[Source], appends: usize, cache_max: u64) -> String {
    let mut out = format!(
        "{} kernel(s) in the order they would boot ({} parameter set(s): {} boot(s)); nothing \
         is fetched or booted (--dry-run)\n\n",
        sources.len(),
        appends,
        sources.len() * appends
    );
    let mut rows = vec![[
        "#".to_string(),
        "kernel".into(),
        "version".into(),
        "download".into(),
        "cache".into(),
    ]];
    let (mut to_fetch, mut bytes) = (0, 0);
    for (i, s) in sources.iter().enumerate() {
        let (version, size, cache) = match s {
            Source::Path(_) => ("-".to_string(), "-".to_string(), "a file".to_string()),
            Source::Package {
                name,
                version,
                size,
            } => {
                let held = kernel::is_cached(name);
                if !held {
                    to_fetch += 1;
                    bytes += size;
                }
                (
                    version.clone().unwrap_or_else(|| "-".into()),
                    if *size > 0 {
                        crate::units::bytes(*size)
                    } else {
                        "?".into()
                    },
                    if held { "cached" } else { "to fetch" }.to_string(),
                )
            }
        };
        rows.push([(i + 1).to_string(), s.label().into(), version, size, cache]);
    }
    let widths: Vec<usize> = (0..5)
        .map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0))
        .collect();
    for r in &rows {
        let line = format!(
            "{:>w0$}  {:<w1$}  {:<w2$}  {:>w3$}  {}",
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3]
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    let held: u64 = kernel_cache::entries().iter().map(|e| e.bytes).sum();
    out.push_str(&format!(
        "\nTo fetch: {to_fetch} package(s), {} to download. The kernel cache ({}) holds {} of \
         --cache-max {}.\n",
        crate::units::bytes(bytes),
        kernel::cache_dir().join("kernels").display(),
        crate::units::bytes(held),
        crate::units::bytes(cache_max)
    ));
    out
}

/// The kernels of `sources`, in their order: image files as they are, packages from the cache
/// or fetched (several at once), or why a package could not be fetched. The cache is then held
/// under `cache_max`, never removing a kernel of this request.
pub fn fetch(sources: &[Source], cache_max: u64) -> Result<Vec<Result<kernel::Kernel, String>>> {
    let packages: Vec<kernel_cache::Wanted> = sources
        .iter()
        .filter_map(|s| match s {
            Source::Package { name, size, .. } => Some(kernel_cache::Wanted { name, size: *size }),
            Source::Path(_) => None,
        })
        .collect();
    let mut fetched = if packages.is_empty() {
        Vec::new()
    } else {
        let _lock = kernel::lock_cache()?;
        let got = kernel_cache::fetch_all(&packages);
        let keep: Vec<_> = packages
            .iter()
            .map(|w| kernel::package_dir(w.name))
            .collect();
        kernel_cache::enforce(cache_max, &keep);
        got
    }
    .into_iter();
    if crate::interrupt::requested() {
        return Err(crate::interrupt::Interrupted.into());
    }
    Ok(sources
        .iter()
        .map(|s| match s {
            Source::Path(p) => kernel::from_path(Path::new(p), "").map_err(|e| format!("{e:#}")),
            Source::Package { .. } => fetched.next().unwrap_or_else(|| Err("not fetched".into())),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_told_from_packages() {
        assert!(is_path("./bzImage") && is_path("/boot/vmlinuz"));
        assert!(!is_path("linux-image-6.1.0-57-cloud-amd64"));
    }

    fn package(name: &str, version: Option<&str>) -> Source {
        Source::Package {
            name: name.into(),
            version: version.map(String::from),
            size: 0,
        }
    }

    #[test]
    fn several_values_sort_together_by_debian_version() {
        let mut s = vec![
            package("linux-image-6.12.100+deb12-cloud-amd64", Some("6.12.100-1")),
            package("linux-image-6.12.9+deb12-cloud-amd64", Some("6.12.9-1")),
            Source::Path("/boot/vmlinuz".into()),
            package("linux-image-6.1.0-10-cloud-amd64", Some("6.1.38-1")),
            package("linux-image-6.1.0-9-cloud-amd64", Some("6.1.27-1")),
            package("linux-image-6.1.0-9-amd64", Some("6.1.27-1")),
            package("linux-image-unknown", None),
        ];
        by_version(&mut s);
        let order: Vec<&str> = s.iter().map(Source::label).collect();
        assert_eq!(
            order,
            [
                "linux-image-6.1.0-9-amd64",
                "linux-image-6.1.0-9-cloud-amd64",
                "/boot/vmlinuz",
                "linux-image-6.1.0-10-cloud-amd64",
                "linux-image-6.12.9+deb12-cloud-amd64",
                "linux-image-6.12.100+deb12-cloud-amd64",
                "linux-image-unknown",
            ]
        );
    }

    #[test]
    fn a_dry_run_lists_every_kernel_with_its_download() {
        let sources = vec![
            Source::Package {
                name: "linux-image-osmeter-test-never-cached".into(),
                version: Some("6.1.170-3".into()),
                size: 3 << 20,
            },
            Source::Path("/no/such/bzImage".into()),
        ];
        let text = dry_run(&sources, 2, 1 << 30);
        assert!(
            text.starts_with("2 kernel(s)") && text.contains("4 boot(s)"),
            "{text}"
        );
        assert!(
            text.contains("6.1.170-3") && text.contains("3 MiB  to fetch"),
            "{text}"
        );
        assert!(
            text.contains("a file") && text.contains("--cache-max 1 GiB"),
            "{text}"
        );
        assert!(text.contains("To fetch: 1 package(s), 3 MiB"), "{text}");
    }
}
