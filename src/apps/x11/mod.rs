//! `app.wish` and `app.bitblt`: X workloads on an Xvfb that osmeter starts for them. Both count
//! the X server's CPU time beside the client's: in X the drawing is done by another process.

pub mod bitblt;
pub mod wish;
pub mod xvfb;

use crate::apps::context::{figure, find_programs, Context, Needed, Outcome, Scale};
use crate::units::Unit;
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

const XVFB: Needed = Needed {
    program: "Xvfb",
    package: "xvfb",
};

/// What `app.wish` runs.
pub const WISH_NEEDED: &[Needed] = &[
    XVFB,
    Needed {
        program: "wish",
        package: "tk",
    },
];

/// What `app.bitblt` runs (the client is osmeter itself).
pub const BITBLT_NEEDED: &[Needed] = &[XVFB];

/// An Xvfb with its scratch directory, both gone on drop (the server first).
pub struct Display {
    pub xvfb: xvfb::Xvfb,
    scratch: crate::scratch::ScratchDir,
}

impl Display {
    pub fn start(ctx: &Context, xvfb_program: &std::path::Path) -> Result<Display> {
        let scratch = crate::scratch::ScratchDir::create(&ctx.dir, "x11")?;
        let xvfb = xvfb::Xvfb::start(xvfb_program, scratch.path())?;
        Ok(Display { xvfb, scratch })
    }

    pub fn dir(&self) -> &std::path::Path {
        self.scratch.path()
    }
}

/// The programs, or why the workload is skipped.
fn programs<T>(needed: &[Needed]) -> Result<Vec<PathBuf>, Outcome<T>> {
    find_programs(needed)
}

/// The programs for a load, where a missing one is an error naming the package.
fn programs_for_load(needed: &[Needed]) -> Result<Vec<PathBuf>> {
    match find_programs::<()>(needed) {
        Ok(found) => Ok(found),
        Err(Outcome::Skipped { reason, install }) => {
            bail!("{reason}: {}", install.unwrap_or_default())
        }
        Err(Outcome::Measured(())) => unreachable!("find_programs only skips"),
    }
}

/// Panels per wish run and timed runs, by scale.
pub fn wish_sizes(scale: Scale) -> (u64, usize) {
    match scale {
        Scale::Quick => (20, 2),
        Scale::Full => (200, 5),
    }
}

/// Everything `app.wish` measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WishFigures {
    pub scale: Scale,
    pub widgets_per_panel: usize,
    /// Each timed run of the script (after one untimed run that loads Tk's files).
    pub runs: Vec<wish::WishRun>,
}

/// Runs `app.wish`: skipped when Xvfb or wish is missing.
pub fn run_wish(ctx: &Context) -> Result<Outcome<WishFigures>> {
    let found = match programs(WISH_NEEDED) {
        Ok(found) => found,
        Err(skip) => return Ok(skip),
    };
    let display = Display::start(ctx, &found[0])?;
    let (iterations, runs) = wish_sizes(ctx.scale);
    wish::run_once(&found[1], &display.xvfb, display.dir(), 2, "warm-up")?;
    let runs = (0..runs)
        .map(|i| {
            wish::run_once(
                &found[1],
                &display.xvfb,
                display.dir(),
                iterations,
                &i.to_string(),
            )
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Outcome::Measured(WishFigures {
        scale: ctx.scale,
        widgets_per_panel: wish::WIDGETS_PER_PANEL,
        runs,
    }))
}

impl WishFigures {
    /// Time per panel (built, changed, destroyed) in each run, and the X server's share.
    pub fn figures(&self) -> Vec<crate::results::figure::Figure> {
        let per_panel: Vec<f64> = self
            .runs
            .iter()
            .map(|r| r.loop_seconds * 1e9 / r.iterations.max(1) as f64)
            .collect();
        let xvfb: Vec<f64> = self
            .runs
            .iter()
            .map(|r| (r.xvfb_cpu.user_s + r.xvfb_cpu.system_s) * 1e9 / r.iterations.max(1) as f64)
            .collect();
        vec![
            figure(
                "app.wish panel".into(),
                Unit::Nanoseconds,
                median(&per_panel),
                per_panel,
            ),
            figure(
                "app.wish xvfb cpu per panel".into(),
                Unit::Nanoseconds,
                median(&xvfb),
                xvfb,
            ),
        ]
    }
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    crate::stats::rounds::quantile(&s, 0.5)
}

/// Frames per scroll, by scale (the seed paper's test showed 760).
pub fn bitblt_frames(scale: Scale) -> u64 {
    match scale {
        Scale::Quick => 190,
        Scale::Full => 760,
    }
}

/// Everything `app.bitblt` measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BitbltFigures {
    pub scale: Scale,
    pub width: u16,
    pub image_rows: u16,
    pub window_rows: u16,
    pub scrolls: Vec<bitblt::Scroll>,
}

/// Runs `app.bitblt`: skipped when Xvfb is missing.
pub fn run_bitblt(ctx: &Context) -> Result<Outcome<BitbltFigures>> {
    let found = match programs(BITBLT_NEEDED) {
        Ok(found) => found,
        Err(skip) => return Ok(skip),
    };
    let display = Display::start(ctx, &found[0])?;
    let conn = display.xvfb.connect()?;
    let frames = bitblt_frames(ctx.scale);
    let mut scrolls = Vec::new();
    for depth in [1, 24] {
        for path in [bitblt::BlitPath::PutImage, bitblt::BlitPath::CopyArea] {
            scrolls.push(bitblt::scroll(
                &display.xvfb,
                &conn,
                ctx.seed,
                depth,
                path,
                frames,
            )?);
        }
    }
    Ok(Outcome::Measured(BitbltFigures {
        scale: ctx.scale,
        width: bitblt::WIDTH,
        image_rows: bitblt::IMAGE_ROWS,
        window_rows: bitblt::WINDOW_ROWS,
        scrolls,
    }))
}

impl BitbltFigures {
    /// Time per frame and bytes per second of each depth and path.
    pub fn figures(&self) -> Vec<crate::results::figure::Figure> {
        let mut out = Vec::new();
        for s in &self.scrolls {
            let at = format!("app.bitblt {}-bit {}", s.depth, s.path.name());
            out.push(figure(
                format!("{at} frame"),
                Unit::Nanoseconds,
                s.seconds * 1e9 / s.frames.max(1) as f64,
                Vec::new(),
            ));
            out.push(figure(
                format!("{at} bytes"),
                Unit::BytesPerSecond,
                s.bytes_per_s,
                Vec::new(),
            ));
        }
        out
    }
}

/// The `app.wish` load of `osmeter latency`: the script run again and again until `stop`;
/// `count` receives the panels drawn.
pub fn wish_until(ctx: &Context, stop: &AtomicBool, count: &AtomicU64) -> Result<()> {
    let found = programs_for_load(WISH_NEEDED)?;
    let display = Display::start(ctx, &found[0])?;
    let mut round = 0u64;
    while !stop.load(Ordering::Relaxed) && !crate::interrupt::requested() {
        // Short runs, so a stop request is seen within a fraction of a second.
        let tag = format!("load-{}", round % 2);
        let _ = std::fs::remove_file(display.dir().join(format!("panels-{tag}.out")));
        let r = wish::run_once(&found[1], &display.xvfb, display.dir(), 5, &tag)?;
        count.fetch_add(r.iterations, Ordering::Relaxed);
        round += 1;
    }
    Ok(())
}

/// The `app.bitblt` load: 24-bit frames sent with PutImage until `stop`; `count` receives the
/// frames drawn.
pub fn bitblt_until(ctx: &Context, stop: &AtomicBool, count: &AtomicU64) -> Result<()> {
    let found = programs_for_load(BITBLT_NEEDED)?;
    let display = Display::start(ctx, &found[0])?;
    let conn = display.xvfb.connect()?;
    while !stop.load(Ordering::Relaxed) && !crate::interrupt::requested() {
        let s = bitblt::scroll(
            &display.xvfb,
            &conn,
            ctx.seed,
            24,
            bitblt::BlitPath::PutImage,
            16,
        )?;
        count.fetch_add(s.frames, Ordering::Relaxed);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
