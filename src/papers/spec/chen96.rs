//! Chen et al. 1996: the per-operation costs and applications of its tables, measured by probes
//! today.

use super::*;

const BANDWIDTH_24K: ProbeRef = probe(
    "net.tcp_bandwidth",
    &[
        ("rcvbuf", Param::Num(24576)),
        ("placement", Param::Str("cross")),
    ],
);
const STRIDE_512: ProbeRef = probe(
    "memory.latency",
    &[
        ("pattern", Param::Str("stride128")),
        ("pages", Param::Str("huge")),
        ("size", Param::Num(512)),
    ],
);
/// Ghostscript rendering a generated 13-page document, as many pages as the paper's conference
/// paper.
const GHOSTSCRIPT: ProbeRef = probe("app.ghostscript", &[("pages", Param::Num(13))]);
/// One wish run building, changing and destroying 100 panels of widgets.
const WISH: ProbeRef = probe("app.wish", &[("panels", Param::Num(100))]);
/// Time per request of nginx under 16 clients, each request on a new connection from a warm page
/// cache: the paper's HTTP/1.0 server served its trace with 8 to 32 requests at once.
const WEB: ProbeRef = probe(
    "app.web",
    &[
        ("conn", Param::Str("close")),
        ("cache", Param::Str("warm")),
        ("clients", Param::Num(16)),
        ("stat", Param::Str("time")),
    ],
);
/// Requests in the paper's web trace (and in osmeter's at the quick size).
const WEB_TRACE_REQUESTS: f64 = 1024.0;
const EXEC_STATIC: ProbeRef = probe(
    "process.exec",
    &[
        ("link", Param::Str("static")),
        ("method", Param::Str("vfork")),
    ],
);
const EXEC_DYNAMIC: ProbeRef = probe(
    "process.exec",
    &[
        ("link", Param::Str("dynamic")),
        ("method", Param::Str("vfork")),
    ],
);

pub(super) static SPEC: Spec = Spec {
    comparisons: &[
        Comparison {
            table: "4.3",
            cells: Cells::Row("dynamic exec cost over static"),
            label: HERE,
            now: Now::Ratio(EXEC_DYNAMIC, EXEC_STATIC),
        },
        Comparison {
            table: "4.4",
            cells: Cells::Row("minimum cycles per memory reference"),
            label: HERE,
            now: Now::Cycles(STRIDE_512),
        },
        Comparison {
            table: "4.7",
            cells: Cells::Row("throughput"),
            label: HERE,
            now: Now::Figure(BANDWIDTH_24K),
        },
        Comparison {
            table: "VII",
            cells: Cells::Where {
                rows: Sel::Is("Ghostscript"),
                columns: Sel::StartsWith("time_"),
            },
            // One row of today's per workload: the three share the table's time columns.
            label: "this machine, Ghostscript",
            now: Now::Figure(GHOSTSCRIPT),
        },
        Comparison {
            table: "VII",
            cells: Cells::Where {
                rows: Sel::Is("Wish"),
                columns: Sel::StartsWith("time_"),
            },
            label: "this machine, Wish",
            now: Now::Figure(WISH),
        },
        Comparison {
            table: "VII",
            cells: Cells::Where {
                rows: Sel::Is("Web Server"),
                columns: Sel::StartsWith("time_"),
            },
            label: "this machine, web server",
            now: Now::Scaled(WEB, WEB_TRACE_REQUESTS),
        },
        Comparison {
            table: "5.3",
            cells: Cells::Row("throughput"),
            label: HERE,
            now: Now::Figure(WEB),
        },
    ],
    derived: &[],
    notes: &[
        ("4.3", "today: vfork and exec of a helper that exits at once, dynamically over statically linked"),
        ("4.4", "today: lmbench's stride walk (lat_mem_rd, 128-byte stride) in 512 bytes, in cycles: an L1 hit, where no prefetcher has anything to add, so it is a load latency; past the L1 the stride walk is helped by the prefetchers and pattern=random is the latency"),
        ("VII", "today: app.ghostscript renders a generated 13-page document (text, curves, fills, images) at 150 dpi to a file, counted whole; the paper's previewed a 13-page, 372 KB conference paper on screen, so the speed-up is indicative; Wish: one wish run building, changing and destroying 100 panels of Tk widgets on Xvfb (the paper's script is not published); Web Server: nginx's time per request with 16 clients, a new connection per request and a warm page cache, times the 1024 requests of the paper's trace"),
        ("5.3", "today: nginx on loopback with 16 clients, a new connection per request, warm page cache, osmeter's Zipf trace; the paper's server sat behind 10 Mb/s Ethernet"),
        ("4.7", "today: 256 KB over loopback TCP to a process on another CPU, 24 KB receive buffer; the paper's 10 Mb/s Ethernet capped all three systems"),
        ("4.2", "several systems on one machine today: `osmeter run --guest 'linux-image-6.1.0-57*-amd64' --append \"\" --append mitigations=off --preset pentium syscall` counts the kernel's flavours and parameters side by side, with the kernel functions that differ (docs/guest-kernels.md)"),
    ],
    elsewhere: None,
    cpu_relative: false,
};
