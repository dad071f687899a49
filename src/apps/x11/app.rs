//! The `app.wish` and `app.bitblt` probes: an Xvfb started inside the workload's cgroup, so the X
//! server's drawing is counted with its client's work (in X the drawing is another process's).
//!
//! `app.wish`: an operation is one whole run of wish on the generated script of `panels` panels
//! (start-up, connecting to the server, the panels, exit), after one untimed run that brings Tk's
//! files into the page cache. `app.bitblt`: an operation is one frame of the scroll at `depth` bits
//! along `path`; each sample sends its frames without waiting and then waits until the server has
//! drawn them, and after the sample the window is read back and compared with the last frame.

use super::bitblt::{BlitPath, Scroller};
use super::{wish, Display, BITBLT_NEEDS, WISH, WISH_NEEDS};
use crate::apps::context::Context;
use crate::apps::packages::Need;
use crate::apps::App;
use crate::harness::env::ProbeEnv;
use crate::results::model::Params;
use crate::results::params::{param_str, param_u64};
use anyhow::{bail, Context as _, Result};
use std::path::Path;

const SEED: u64 = 0xB17B_1996;

fn context(env: &ProbeEnv) -> Context {
    Context::new(env.scratch, env.scale, SEED)
}

pub struct WishApp {
    ctx: Context,
    panels: u64,
    display: Option<Display>,
}

impl WishApp {
    pub fn new(env: &ProbeEnv, p: &Params) -> Result<WishApp> {
        let panels = param_u64(p, "panels").context("app.wish")?;
        if !(1..=10_000).contains(&panels) {
            bail!("app.wish: panels={panels}: give 1 to 10000 panels per run");
        }
        Ok(WishApp {
            ctx: context(env),
            panels,
            display: None,
        })
    }
}

impl App for WishApp {
    fn needs(&self) -> &'static [Need] {
        WISH_NEEDS
    }

    fn start(&mut self) -> Result<()> {
        let display = Display::start(&self.ctx)?;
        // Loads Tk's files and fonts, untimed; a broken install fails here.
        wish::run_once(
            Path::new(WISH.program),
            &display.xvfb,
            display.dir(),
            2,
            "warm-up",
        )?;
        self.display = Some(display);
        Ok(())
    }

    fn run_once(&mut self, _index: u64) -> Result<()> {
        let Some(display) = &self.display else {
            bail!("Xvfb was not started; this is a bug");
        };
        wish::run_once(
            Path::new(WISH.program),
            &display.xvfb,
            display.dir(),
            self.panels,
            "op",
        )?;
        Ok(())
    }

    fn notes(&self) -> Vec<String> {
        vec![format!(
            "one operation is a whole wish run of {} panel{} of {} widgets each on osmeter's \
             Xvfb ({}x{}x24)",
            self.panels,
            if self.panels == 1 { "" } else { "s" },
            wish::WIDGETS_PER_PANEL,
            super::xvfb::SCREEN.0,
            super::xvfb::SCREEN.1
        )]
    }

    fn max_iters(&self) -> u64 {
        1000
    }
}

pub struct BitbltApp {
    ctx: Context,
    depth: u8,
    path: BlitPath,
    // Declared before the display: the connection closes before Xvfb stops.
    scroller: Option<Scroller>,
    display: Option<Display>,
}

impl BitbltApp {
    pub fn new(env: &ProbeEnv, p: &Params) -> Result<BitbltApp> {
        let depth = param_u64(p, "depth").context("app.bitblt")?;
        if depth != 1 && depth != 24 {
            bail!("app.bitblt: depth={depth}: choose 1 or 24 bits per pixel");
        }
        let path = match param_str(p, "path").context("app.bitblt")? {
            "put-image" => BlitPath::PutImage,
            "copy-area" => BlitPath::CopyArea,
            other => bail!("app.bitblt: path={other:?}: choose put-image or copy-area"),
        };
        Ok(BitbltApp {
            ctx: context(env),
            depth: depth as u8,
            path,
            scroller: None,
            display: None,
        })
    }
}

impl App for BitbltApp {
    fn needs(&self) -> &'static [Need] {
        BITBLT_NEEDS
    }

    fn start(&mut self) -> Result<()> {
        let display = Display::start(&self.ctx)?;
        let conn = display.xvfb.connect()?;
        self.scroller = Some(Scroller::new(conn, self.ctx.seed, self.depth, self.path)?);
        self.display = Some(display);
        Ok(())
    }

    fn run_once(&mut self, _index: u64) -> Result<()> {
        self.run(1)
    }

    fn run(&mut self, iters: u64) -> Result<()> {
        match &mut self.scroller {
            Some(s) => s.frames(iters),
            None => bail!("Xvfb was not started; this is a bug"),
        }
    }

    fn finish(&mut self) -> Result<()> {
        match &self.scroller {
            Some(s) => s.check(),
            None => Ok(()),
        }
    }

    fn bytes_per_op(&self) -> Option<u64> {
        self.scroller.as_ref().map(Scroller::frame_bytes)
    }

    fn notes(&self) -> Vec<String> {
        vec![format!(
            "one operation is one frame: a {}x{} window of a {}x{} image at {} bit{} per pixel, \
             {} (the image scrolls one row per frame)",
            super::bitblt::WIDTH,
            super::bitblt::WINDOW_ROWS,
            super::bitblt::WIDTH,
            super::bitblt::IMAGE_ROWS,
            self.depth,
            if self.depth == 1 { "" } else { "s" },
            match self.path {
                BlitPath::PutImage => "sent by the client with PutImage",
                BlitPath::CopyArea => "copied inside the server from a pixmap (CopyArea/CopyPlane)",
            }
        )]
    }

    fn max_iters(&self) -> u64 {
        1 << 20
    }
}
