use super::*;
use crate::fixtures::guest_doc;

fn doc(release: &str, kernel_ins: f64) -> GuestDoc {
    let mut d = guest_doc(&format!("linux-image-{release}"), kernel_ins);
    d.release = Some(release.into());
    d
}

fn parts(funcs: &[(&str, f64)]) -> KernelParts {
    KernelParts {
        categories: Default::default(),
        functions: funcs.iter().map(|(f, v)| (f.to_string(), *v)).collect(),
    }
}

/// Orders the test's versions numerically, as Debian's comparison would them.
fn order(a: &str, b: &str) -> Ordering {
    let key = |v: &str| -> Vec<u64> {
        v.split(['.', '-', '+'])
            .filter_map(|x| x.parse().ok())
            .collect()
    };
    key(a).cmp(&key(b))
}

#[test]
fn releases_split_into_version_and_flavour() {
    assert_eq!(
        split_release("6.1.0-56-cloud-amd64"),
        ("6.1.0-56".to_string(), "cloud-amd64".to_string())
    );
    assert_eq!(
        split_release("6.12.100+deb12-amd64"),
        ("6.12.100+deb12".to_string(), "amd64".to_string())
    );
    assert_eq!(
        split_release("6.13.0-rc1+"),
        ("6.13.0-rc1+".to_string(), String::new())
    );
    assert!(wanted("syscall.dup", "syscall.dup", &["syscall".into()]));
    assert!(!wanted("syscallx.dup", "syscallx.dup", &["syscall".into()]));
    assert!(wanted("fs.open_close", "fs.open_close depth=1", &[]));
}

#[test]
fn kernels_are_ordered_by_version_and_every_change_is_a_point() {
    let (a, b, c) = (
        doc("6.1.0-10-cloud-amd64", 307.0),
        doc("6.1.0-9-cloud-amd64", 307.0),
        doc("6.12.100+deb12-cloud-amd64", 309.0),
    );
    let rt = doc("6.1.0-9-rt-amd64", 350.0);
    let runs = [
        Stored { run: "r3", doc: &c },
        Stored { run: "r1", doc: &a },
        Stored { run: "r2", doc: &b },
        Stored {
            run: "r4",
            doc: &rt,
        },
    ];
    let t = build(&runs, &[], &order);
    assert_eq!(t.series.len(), 2, "{t:?}");
    let cloud = &t.series[0];
    assert_eq!(cloud.flavour, "cloud-amd64");
    let versions: Vec<&str> = cloud.kernels.iter().map(|k| k.version.as_str()).collect();
    assert_eq!(versions, ["6.1.0-9", "6.1.0-10", "6.12.100+deb12"]);
    assert_eq!(cloud.points, ["syscall.null"]);
    assert_eq!(cloud.change_points.len(), 1, "{:?}", cloud.change_points);
    let cp = &cloud.change_points[0];
    assert_eq!(
        (cp.from.as_str(), cp.to.as_str()),
        ("6.1.0-10", "6.12.100+deb12")
    );
    assert!((cp.relative.unwrap() - 2.0 / 307.0).abs() < 1e-12);
    assert!(cp.functions.is_none());
    let text = text::render(&t);
    assert!(
        text.contains("Kernel timeline: cloud-amd64, no parameters"),
        "{text}"
    );
    assert!(
        text.contains(
            "6.1.0-10 -> 6.12.100+deb12: syscall.null +2 kernel instructions (+0.7 % of 307)"
        ),
        "{text}"
    );
    assert!(text.contains("No count changed"), "{text}");
    let csv = text::csv(&t);
    assert_eq!(csv.lines().count(), 1 + 4, "{csv}");
    assert!(
        csv.contains(
            "cloud-amd64,,,release,100,6.1.0-9,linux-image-6.1.0-9-cloud-amd64,syscall.null,307,12"
        ),
        "{csv}"
    );
    assert!(build(&runs, &["fs".into()], &order).series.is_empty());
}

#[test]
fn a_change_point_is_split_by_the_functions_that_moved() {
    let (mut a, mut b) = (
        doc("6.12.110+deb12-cloud-amd64", 890.0),
        doc("6.12.112+deb12-cloud-amd64", 928.0),
    );
    a.probes[0].kernel_parts = Some(parts(&[("fd_install", 10.0), ("do_dup2", 40.0)]));
    b.probes[0].kernel_parts = Some(parts(&[
        ("fd_install", 46.0),
        ("do_dup2", 42.0),
        ("tiny", 0.2),
    ]));
    // A newer run without the split counts the same: the older run's split is kept.
    let mut newer = b.clone();
    newer.probes[0].kernel_parts = None;
    let runs = [
        Stored {
            run: "new",
            doc: &newer,
        },
        Stored { run: "b", doc: &b },
        Stored { run: "a", doc: &a },
    ];
    let t = build(&runs, &["syscall.null".into()], &order);
    let s = &t.series[0];
    assert_eq!(s.kernels[1].runs, ["new", "b"]);
    let f = s.change_points[0].functions.as_ref().unwrap();
    assert_eq!(f.len(), 2, "{f:?}");
    assert_eq!(
        (f[0].function.as_str(), f[0].after - f[0].before),
        ("fd_install", 36.0)
    );
    let text = text::render(&t);
    assert!(
        text.contains("6.12.110+deb12 -> 6.12.112+deb12: syscall.null +38 kernel instructions"),
        "{text}"
    );
    assert!(
        text.contains("      +36 in fd_install (10 -> 46)"),
        "{text}"
    );
}
