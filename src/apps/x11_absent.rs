//! Stands in for x11/ in an osmeter built without the `x11` feature (x11rb): `app.wish` and
//! `app.bitblt`, as probes or as latency's loads, stop with the way to get them instead of
//! vanishing from the probe list.

use crate::apps::context::Context;
use crate::apps::packages::{need, Need};
use anyhow::{anyhow, Error, Result};
use std::sync::atomic::{AtomicBool, AtomicU64};

pub const XVFB: Need = need("/usr/bin/Xvfb", "xvfb");
pub const WISH: Need = need("/usr/bin/wish", "tk");

pub const WISH_NEEDS: &[Need] = &[XVFB, WISH];

pub const BITBLT_NEEDS: &[Need] = &[XVFB];

fn without_x11(what: &str) -> Error {
    anyhow!(
        "{what} needs the X server's client, and this osmeter was built without the `x11` \
         feature: build it with the default features (`cargo build --release`)"
    )
}

pub fn wish_until(_ctx: &Context, _stop: &AtomicBool, _count: &AtomicU64) -> Result<()> {
    Err(without_x11("the wish load"))
}

pub fn bitblt_until(_ctx: &Context, _stop: &AtomicBool, _count: &AtomicU64) -> Result<()> {
    Err(without_x11("the bitblt load"))
}

pub mod app {
    use crate::apps::packages::Need;
    use crate::apps::App;
    use crate::harness::env::ProbeEnv;
    use crate::results::model::Params;
    use anyhow::Result;

    /// Never made: [`WishApp::new`] always says why.
    pub enum WishApp {}

    /// Never made: [`BitbltApp::new`] always says why.
    pub enum BitbltApp {}

    impl WishApp {
        pub fn new(_env: &ProbeEnv, _p: &Params) -> Result<WishApp> {
            Err(super::without_x11("app.wish"))
        }
    }

    impl BitbltApp {
        pub fn new(_env: &ProbeEnv, _p: &Params) -> Result<BitbltApp> {
            Err(super::without_x11("app.bitblt"))
        }
    }

    impl App for WishApp {
        fn needs(&self) -> &'static [Need] {
            match *self {}
        }
        fn run_once(&mut self, _index: u64) -> Result<()> {
            match *self {}
        }
    }

    impl App for BitbltApp {
        fn needs(&self) -> &'static [Need] {
            match *self {}
        }
        fn run_once(&mut self, _index: u64) -> Result<()> {
            match *self {}
        }
    }
}
