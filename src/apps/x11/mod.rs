//! `app.wish` and `app.bitblt`: X workloads on an Xvfb that osmeter starts for them. Both count
//! the X server's CPU time beside the client's: in X the drawing is done by another process.

pub mod app;
pub mod bitblt;
pub mod wish;
pub mod xvfb;

use crate::apps::context::Context;
use crate::apps::packages::{need, require, Need};
use anyhow::Result;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

pub const XVFB: Need = need("/usr/bin/Xvfb", "xvfb");
pub const WISH: Need = need("/usr/bin/wish", "tk");

/// What `app.wish` runs.
pub const WISH_NEEDS: &[Need] = &[XVFB, WISH];

/// What `app.bitblt` runs (the client is osmeter itself, speaking X11 without Xlib).
pub const BITBLT_NEEDS: &[Need] = &[XVFB];

/// An Xvfb with its scratch directory, both gone on drop (the server first).
pub struct Display {
    pub xvfb: xvfb::Xvfb,
    scratch: crate::scratch::ScratchDir,
}

impl Display {
    pub fn start(ctx: &Context) -> Result<Display> {
        let scratch = crate::scratch::ScratchDir::create(&ctx.dir, "x11")?;
        let xvfb = xvfb::Xvfb::start(Path::new(XVFB.program), scratch.path())?;
        Ok(Display { xvfb, scratch })
    }

    pub fn dir(&self) -> &std::path::Path {
        self.scratch.path()
    }
}

/// The `app.wish` load of `osmeter latency`: the script run again and again until `stop`;
/// `count` receives the panels drawn.
pub fn wish_until(ctx: &Context, stop: &AtomicBool, count: &AtomicU64) -> Result<()> {
    require(WISH_NEEDS)?;
    let display = Display::start(ctx)?;
    let mut round = 0u64;
    while !stop.load(Ordering::Relaxed) && !crate::interrupt::requested() {
        // Short runs, so a stop request is seen within a fraction of a second.
        let tag = format!("load-{}", round % 2);
        let _ = std::fs::remove_file(display.dir().join(format!("panels-{tag}.out")));
        let r = wish::run_once(
            Path::new(WISH.program),
            &display.xvfb,
            display.dir(),
            5,
            &tag,
        )?;
        count.fetch_add(r.iterations, Ordering::Relaxed);
        round += 1;
    }
    Ok(())
}

/// The `app.bitblt` load: 24-bit frames sent with PutImage until `stop`; `count` receives the
/// frames drawn.
pub fn bitblt_until(ctx: &Context, stop: &AtomicBool, count: &AtomicU64) -> Result<()> {
    require(BITBLT_NEEDS)?;
    let display = Display::start(ctx)?;
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
