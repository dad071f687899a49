//! `app.bitblt`: a tall image scrolled through a window one row per frame, as in the bitblt test
//! of Chen et al. 1996 (a 570 x 1520 pixel image shown 570 x 760 at a time, rows 0-759, then
//! 1-760, and so on), at 1 bit and 24 bits per pixel, along two paths: every frame sent from the
//! client with PutImage (the image crosses the socket and is converted by the server each time)
//! and every frame copied inside the server from a pixmap that holds the image (CopyArea, or
//! CopyPlane, which expands a 1-bit pixmap into the window's colours).
//!
//! The frames of a run are sent without waiting, then one round trip makes sure the server has
//! drawn them all; the last frame is read back and compared pixel by pixel with what it must show.

use crate::apps::context::CpuTime;
use crate::stats::rng::Rng;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use x11rb::connection::{Connection, RequestConnection};
use x11rb::protocol::xproto::{
    self, ConnectionExt as _, CreateGCAux, CreateWindowAux, ImageFormat, ImageOrder, MapState,
    WindowClass,
};
use x11rb::rust_connection::RustConnection;

/// The seed paper's image and window.
pub const WIDTH: u16 = 570;
pub const IMAGE_ROWS: u16 = 1520;
pub const WINDOW_ROWS: u16 = 760;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum BlitPath {
    /// Each frame sent by the client (PutImage).
    PutImage,
    /// Each frame copied by the server from a pixmap (CopyArea; CopyPlane for 1 bit).
    CopyArea,
}

impl BlitPath {
    pub fn name(self) -> &'static str {
        match self {
            BlitPath::PutImage => "put-image",
            BlitPath::CopyArea => "copy-area",
        }
    }
}

/// One scroll through the image at one depth along one path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Scroll {
    /// Bits per pixel of the image: 1 or 24.
    pub depth: u8,
    pub path: BlitPath,
    pub frames: u64,
    pub seconds: f64,
    pub frames_per_s: f64,
    /// Image bytes per frame in the depth's own format (what PutImage carries), per second.
    pub bytes_per_s: f64,
    pub frame_bytes: u64,
    pub client_cpu: CpuTime,
    pub xvfb_cpu: CpuTime,
}

/// How an image of one depth is laid out for the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub depth: u8,
    pub format: ImageFormat,
    pub row_bytes: usize,
}

/// The layout the server's setup prescribes for `depth` (1: a bitmap; 24: a Z pixmap).
pub fn layout(setup: &xproto::Setup, depth: u8) -> Result<Layout> {
    if depth == 1 {
        let pad = usize::from(setup.bitmap_format_scanline_pad).max(8);
        return Ok(Layout {
            depth,
            format: ImageFormat::XY_BITMAP,
            row_bytes: usize::from(WIDTH).div_ceil(pad) * pad / 8,
        });
    }
    let f = setup
        .pixmap_formats
        .iter()
        .find(|f| f.depth == depth)
        .with_context(|| format!("the X server has no pixmap format of depth {depth}"))?;
    let pad = usize::from(f.scanline_pad).max(8);
    let bits = usize::from(WIDTH) * usize::from(f.bits_per_pixel);
    Ok(Layout {
        depth,
        format: ImageFormat::Z_PIXMAP,
        row_bytes: bits.div_ceil(pad) * pad / 8,
    })
}

/// The whole image in `layout`, drawn from the seed (random bits: nothing for the server to
/// shortcut).
pub fn image(seed: u64, layout: Layout) -> Vec<u8> {
    let mut rng = Rng::stream(seed, 0xb17b + u64::from(layout.depth));
    let mut data = vec![0u8; layout.row_bytes * usize::from(IMAGE_ROWS)];
    for chunk in data.chunks_mut(8) {
        let bytes = rng.next_u64().to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
    data
}

/// The colour the window must show at column `x` of image row `row`.
pub fn expected_pixel(
    setup: &xproto::Setup,
    layout: Layout,
    data: &[u8],
    row: usize,
    x: usize,
) -> u32 {
    let line = &data[row * layout.row_bytes..(row + 1) * layout.row_bytes];
    if layout.depth == 1 {
        let unit = usize::from(setup.bitmap_format_scanline_unit).max(8) / 8;
        let byte = if setup.image_byte_order == ImageOrder::LSB_FIRST || unit == 1 {
            x / 8
        } else {
            (x / 8) / unit * unit + unit - 1 - (x / 8) % unit
        };
        let bit = if setup.bitmap_format_bit_order == ImageOrder::LSB_FIRST {
            x % 8
        } else {
            7 - x % 8
        };
        let screen = &setup.roots[0];
        return if line[byte] >> bit & 1 == 1 {
            screen.white_pixel
        } else {
            screen.black_pixel
        };
    }
    pixel_at(setup, line, x) & 0x00ff_ffff
}

/// A 32-bit pixel of a Z-pixmap row in the server's byte order.
fn pixel_at(setup: &xproto::Setup, line: &[u8], x: usize) -> u32 {
    let b = [
        line[4 * x],
        line[4 * x + 1],
        line[4 * x + 2],
        line[4 * x + 3],
    ];
    if setup.image_byte_order == ImageOrder::LSB_FIRST {
        u32::from_le_bytes(b)
    } else {
        u32::from_be_bytes(b)
    }
}

/// The window, its graphics contexts and the image pixmaps of one connection.
struct Stage<'c> {
    conn: &'c RustConnection,
    window: u32,
    gc: u32,
}

impl<'c> Stage<'c> {
    fn new(conn: &'c RustConnection) -> Result<Stage<'c>> {
        let screen = &conn.setup().roots[0];
        if screen.root_depth != 24 {
            bail!(
                "the X screen has depth {} instead of 24; osmeter's Xvfb is started with 24",
                screen.root_depth
            );
        }
        let window = conn.generate_id()?;
        conn.create_window(
            screen.root_depth,
            window,
            screen.root,
            0,
            0,
            WIDTH,
            WINDOW_ROWS,
            0,
            WindowClass::INPUT_OUTPUT,
            screen.root_visual,
            &CreateWindowAux::new().background_pixel(screen.black_pixel),
        )?;
        conn.map_window(window)?;
        let gc = conn.generate_id()?;
        conn.create_gc(
            gc,
            window,
            &CreateGCAux::new()
                .foreground(screen.white_pixel)
                .background(screen.black_pixel)
                .graphics_exposures(0),
        )?;
        let attrs = conn.get_window_attributes(window)?.reply()?;
        if attrs.map_state != MapState::VIEWABLE {
            bail!("the bitblt window is not viewable on the X server, so nothing would be drawn");
        }
        Ok(Stage { conn, window, gc })
    }

    /// Rows `first..first + rows` of `data` into the top of `drawable`, in as many PutImage
    /// requests as the server's request size needs (as Xlib splits a large image).
    fn put_rows(
        &self,
        drawable: u32,
        gc: u32,
        layout: Layout,
        data: &[u8],
        first: usize,
        rows: usize,
    ) -> Result<()> {
        // A PutImage request has a 24-byte head.
        let room = self.conn.maximum_request_bytes().saturating_sub(24);
        let per_request = (room / layout.row_bytes).max(1);
        let mut done = 0;
        while done < rows {
            let n = per_request.min(rows - done);
            let from = (first + done) * layout.row_bytes;
            self.conn.put_image(
                layout.format,
                drawable,
                gc,
                WIDTH,
                n as u16,
                0,
                done as i16,
                0,
                layout.depth,
                &data[from..from + n * layout.row_bytes],
            )?;
            done += n;
        }
        Ok(())
    }

    /// Waits until the server has handled every request sent so far.
    fn sync(&self) -> Result<()> {
        self.conn.get_input_focus()?.reply()?;
        Ok(())
    }

    /// What the window shows, one 32-bit pixel per position, in the server's byte order.
    fn window_rows(&self) -> Result<Vec<u8>> {
        let reply = self
            .conn
            .get_image(
                ImageFormat::Z_PIXMAP,
                self.window,
                0,
                0,
                WIDTH,
                WINDOW_ROWS,
                !0,
            )?
            .reply()?;
        Ok(reply.data)
    }
}

/// Uploads the whole image into a new pixmap of `depth` (the copy path's source, filled before
/// any timing).
fn upload_pixmap(stage: &Stage, layout: Layout, data: &[u8]) -> Result<u32> {
    let conn = stage.conn;
    let depth = layout.depth;
    let p = conn.generate_id()?;
    conn.create_pixmap(depth, p, stage.window, WIDTH, IMAGE_ROWS)?;
    let pgc = conn.generate_id()?;
    // On a 1-bit pixmap, foreground 1 and background 0 store the bits as they are.
    conn.create_gc(
        pgc,
        p,
        &CreateGCAux::new()
            .foreground(if depth == 1 { 1 } else { 0 })
            .background(0)
            .graphics_exposures(0),
    )?;
    stage.put_rows(p, pgc, layout, data, 0, usize::from(IMAGE_ROWS))?;
    conn.free_gc(pgc)?;
    Ok(p)
}

/// The image row at the top of frame `f`: one row further each frame, round and round.
fn top_of(f: u64) -> usize {
    (f as usize) % usize::from(IMAGE_ROWS - WINDOW_ROWS + 1)
}

/// Sends frame `f` (without waiting for the server): the rows from the client, or a copy from
/// `pixmap` inside the server.
fn send_frame(
    stage: &Stage,
    layout: Layout,
    data: &[u8],
    pixmap: Option<u32>,
    f: u64,
) -> Result<()> {
    let conn = stage.conn;
    let top = top_of(f);
    match pixmap {
        None => stage.put_rows(
            stage.window,
            stage.gc,
            layout,
            data,
            top,
            usize::from(WINDOW_ROWS),
        )?,
        Some(p) if layout.depth == 1 => {
            conn.copy_plane(
                p,
                stage.window,
                stage.gc,
                0,
                top as i16,
                0,
                0,
                WIDTH,
                WINDOW_ROWS,
                1,
            )?;
        }
        Some(p) => {
            conn.copy_area(
                p,
                stage.window,
                stage.gc,
                0,
                top as i16,
                0,
                0,
                WIDTH,
                WINDOW_ROWS,
            )?;
        }
    }
    Ok(())
}

/// Scrolls through the image `frames` times at `depth` along `path`, then checks the last frame.
pub fn scroll(
    xvfb: &super::xvfb::Xvfb,
    conn: &RustConnection,
    seed: u64,
    depth: u8,
    path: BlitPath,
    frames: u64,
) -> Result<Scroll> {
    let stage = Stage::new(conn)?;
    let layout = layout(conn.setup(), depth)?;
    let data = image(seed, layout);
    // The copy path's pixmap holds the whole image, uploaded before the clock starts.
    let pixmap = match path {
        BlitPath::CopyArea => Some(upload_pixmap(&stage, layout, &data)?),
        BlitPath::PutImage => None,
    };
    stage.sync()?;
    let client_before = CpuTime::this_thread();
    let xvfb_before = xvfb.cpu_time();
    let started = std::time::Instant::now();
    for f in 0..frames {
        send_frame(&stage, layout, &data, pixmap, f)?;
        if f % 64 == 0 && crate::interrupt::requested() {
            return Err(crate::interrupt::Interrupted.into());
        }
    }
    stage.sync()?;
    let seconds = started.elapsed().as_secs_f64();
    let xvfb_cpu = xvfb.cpu_time().since(xvfb_before);
    let client_cpu = CpuTime::this_thread().since(client_before);
    if frames > 0 {
        check_window(&stage, layout, &data, top_of(frames - 1))?;
    }
    if let Some(p) = pixmap {
        conn.free_pixmap(p)?;
    }
    conn.destroy_window(stage.window)?;
    conn.free_gc(stage.gc)?;
    stage.sync()?;
    let frame_bytes = (layout.row_bytes * usize::from(WINDOW_ROWS)) as u64;
    Ok(Scroll {
        depth,
        path,
        frames,
        seconds,
        frames_per_s: frames as f64 / seconds.max(1e-9),
        bytes_per_s: (frame_bytes * frames) as f64 / seconds.max(1e-9),
        frame_bytes,
        client_cpu,
        xvfb_cpu,
    })
}

/// A scroll kept open between samples, for the `app.bitblt` probe: the window, the image and
/// (on the copy path) its pixmap are made once, each sample sends the next frames and waits for
/// the server, and [`Scroller::check`] compares the window with the last frame sent.
pub struct Scroller {
    conn: RustConnection,
    window: u32,
    gc: u32,
    layout: Layout,
    data: Vec<u8>,
    pixmap: Option<u32>,
    /// Frames sent so far.
    sent: u64,
}

impl Scroller {
    pub fn new(conn: RustConnection, seed: u64, depth: u8, path: BlitPath) -> Result<Scroller> {
        let (window, gc, layout, data, pixmap) = {
            let stage = Stage::new(&conn)?;
            let layout = layout(conn.setup(), depth)?;
            let data = image(seed, layout);
            let pixmap = match path {
                BlitPath::CopyArea => Some(upload_pixmap(&stage, layout, &data)?),
                BlitPath::PutImage => None,
            };
            stage.sync()?;
            (stage.window, stage.gc, layout, data, pixmap)
        };
        Ok(Scroller {
            conn,
            window,
            gc,
            layout,
            data,
            pixmap,
            sent: 0,
        })
    }

    fn stage(&self) -> Stage<'_> {
        Stage {
            conn: &self.conn,
            window: self.window,
            gc: self.gc,
        }
    }

    /// Sends the next `n` frames and waits until the server has drawn them.
    pub fn frames(&mut self, n: u64) -> Result<()> {
        let stage = self.stage();
        for i in 0..n {
            send_frame(&stage, self.layout, &self.data, self.pixmap, self.sent + i)?;
            if i % 64 == 0 && crate::interrupt::requested() {
                return Err(crate::interrupt::Interrupted.into());
            }
        }
        stage.sync()?;
        self.sent += n;
        Ok(())
    }

    /// The window must show the last frame sent.
    pub fn check(&self) -> Result<()> {
        if self.sent == 0 {
            return Ok(());
        }
        check_window(
            &self.stage(),
            self.layout,
            &self.data,
            top_of(self.sent - 1),
        )
    }

    /// Image bytes of one frame in the depth's own format (what PutImage carries).
    pub fn frame_bytes(&self) -> u64 {
        (self.layout.row_bytes * usize::from(WINDOW_ROWS)) as u64
    }
}

/// The window must show image rows `top..top + WINDOW_ROWS`.
fn check_window(stage: &Stage, layout: Layout, data: &[u8], top: usize) -> Result<()> {
    let shown = stage.window_rows()?;
    let setup = stage.conn.setup();
    let line_bytes = shown.len() / usize::from(WINDOW_ROWS);
    for y in 0..usize::from(WINDOW_ROWS) {
        let line = &shown[y * line_bytes..(y + 1) * line_bytes];
        for x in 0..usize::from(WIDTH) {
            let want = expected_pixel(setup, layout, data, top + y, x);
            let got = pixel_at(setup, line, x) & 0x00ff_ffff;
            if got != want {
                bail!(
                    "the window shows {got:06x} at ({x}, {y}) instead of {want:06x} after \
                     scrolling the {}-bit image to row {top}",
                    layout.depth
                );
            }
        }
    }
    Ok(())
}
