use super::*;
use crate::apps::context::{live_in_group, Context, Scale};
use crate::apps::packages::present_for_test;
use x11rb::connection::Connection as _;

fn quick_context(seed: u64) -> Context {
    Context::new(&std::env::temp_dir(), Scale::Quick, seed)
}

#[test]
fn xvfb_takes_only_its_cookie_and_leaves_no_socket_or_process() {
    if !present_for_test(BITBLT_NEEDS) {
        return;
    }
    let display = Display::start(&quick_context(1)).unwrap();
    let (pid, socket, dir) = (
        display.xvfb.pid(),
        display.xvfb.socket(),
        display.dir().to_owned(),
    );
    assert!(socket.exists(), "{}", socket.display());
    let conn = display.xvfb.connect().unwrap();
    assert_eq!(conn.setup().roots[0].root_depth, 24);
    // Without the cookie the server refuses (x11rb would otherwise connect without auth).
    let stream = std::os::unix::net::UnixStream::connect(&socket).unwrap();
    let (stream, _) = x11rb::rust_connection::DefaultStream::from_unix_stream(stream).unwrap();
    let refused = x11rb::rust_connection::RustConnection::connect_to_stream(stream, 0);
    assert!(refused.is_err(), "Xvfb let a client in without the cookie");
    drop(conn);
    drop(display);
    assert!(live_in_group(pid).is_empty(), "Xvfb left running");
    assert!(!socket.exists(), "{} left behind", socket.display());
    assert!(!dir.exists(), "{} left behind", dir.display());
}

#[test]
fn wish_builds_and_destroys_every_panel() {
    const PANELS: u64 = 30;
    if !present_for_test(WISH_NEEDS) {
        return;
    }
    let display = Display::start(&quick_context(2)).unwrap();
    let r = wish::run_once(
        Path::new(WISH.program),
        &display.xvfb,
        display.dir(),
        PANELS,
        "t",
    )
    .unwrap();
    assert_eq!(r.iterations, PANELS);
    assert_eq!(r.widgets_created, PANELS * wish::WIDGETS_PER_PANEL as u64);
    assert!(r.loop_seconds > 0.0 && r.wall_seconds >= r.loop_seconds);
    // The X server did the drawing. Its time is sampled at timer ticks (/proc/PID/stat), so there
    // are panels enough to keep it busy for many ticks, even on a loaded machine.
    assert!(r.xvfb_cpu.user_s + r.xvfb_cpu.system_s > 0.0, "{r:?}");
}

#[test]
fn every_scroll_ends_on_the_right_pixels() {
    if !present_for_test(BITBLT_NEEDS) {
        return;
    }
    let display = Display::start(&quick_context(3)).unwrap();
    let conn = display.xvfb.connect().unwrap();
    for depth in [1, 24] {
        for path in [bitblt::BlitPath::PutImage, bitblt::BlitPath::CopyArea] {
            // Each scroll reads its last frame back and compares every pixel (an error otherwise).
            let s = bitblt::scroll(&display.xvfb, &conn, 3, depth, path, 40).unwrap();
            assert_eq!(s.frames, 40);
            assert!(s.seconds > 0.0);
            // 570 pixels: 72 bytes a row at 1 bit (32-bit padding), 2280 at 32 bits per pixel.
            let row = if depth == 1 { 72 } else { 2280 };
            assert_eq!(s.frame_bytes, row * 760);
        }
    }
    // The probe's scroller continues across samples and checks the frame it ended on.
    let conn = display.xvfb.connect().unwrap();
    let mut s = bitblt::Scroller::new(conn, 3, 1, bitblt::BlitPath::CopyArea).unwrap();
    s.frames(5).unwrap();
    s.check().unwrap();
    s.frames(900).unwrap();
    s.check().unwrap();
}
