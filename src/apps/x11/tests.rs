use super::*;
use crate::apps::context::{live_in_group, programs_for_test};
use x11rb::connection::Connection as _;

fn quick_context(seed: u64) -> Context {
    Context::new(&std::env::temp_dir(), Scale::Quick, seed)
}

#[test]
fn xvfb_takes_only_its_cookie_and_leaves_no_socket_or_process() {
    let Some(found) = programs_for_test(BITBLT_NEEDED) else {
        return;
    };
    let display = Display::start(&quick_context(1), &found[0]).unwrap();
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
    let Some(found) = programs_for_test(WISH_NEEDED) else {
        return;
    };
    let display = Display::start(&quick_context(2), &found[0]).unwrap();
    let r = wish::run_once(&found[1], &display.xvfb, display.dir(), 3, "t").unwrap();
    assert_eq!(r.iterations, 3);
    assert_eq!(r.widgets_created, 3 * wish::WIDGETS_PER_PANEL as u64);
    assert!(r.loop_seconds > 0.0 && r.wall_seconds >= r.loop_seconds);
    // The X server did the drawing.
    assert!(r.xvfb_cpu.user_s + r.xvfb_cpu.system_s > 0.0, "{r:?}");
}

#[test]
fn every_scroll_ends_on_the_right_pixels() {
    let Some(_) = programs_for_test(BITBLT_NEEDED) else {
        return;
    };
    let Outcome::Measured(b) = run_bitblt(&quick_context(3)).unwrap() else {
        panic!("Xvfb is installed but the workload was skipped")
    };
    // Each scroll read its last frame back and compared every pixel (an error otherwise).
    assert_eq!(b.scrolls.len(), 4);
    for s in &b.scrolls {
        assert_eq!(s.frames, bitblt_frames(Scale::Quick));
        assert!(s.seconds > 0.0);
    }
    let bits = b.scrolls.iter().find(|s| s.depth == 1).unwrap();
    let full = b.scrolls.iter().find(|s| s.depth == 24).unwrap();
    // 570 pixels: 72 bytes a row at 1 bit (32-bit padding), 2280 at 32 bits per pixel.
    assert_eq!(bits.frame_bytes, 72 * 760);
    assert_eq!(full.frame_bytes, 2280 * 760);
    assert_eq!(b.figures().len(), 8);
}
