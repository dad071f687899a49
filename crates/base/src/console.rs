//! Writing to the terminal when the reader may have gone: `osmeter stat ... 2>&1 | head -1` closes
//! stderr while osmeter still has things to say. std's `eprintln!` panics then (exit 101). Here a
//! closed stream ends the message quietly and the command carries on, so a run still finishes,
//! cleans up and is saved, and exits 0 as `head`'s other writers do.

use std::io::Write;

/// Writes a line to stderr; an error (a closed pipe, a full disk behind `2>file`) is dropped,
/// because there is nowhere left to report it.
/// Control characters other than line feeds and tabs are shown escaped: messages quote stored
/// tags, names and reasons (see [`crate::text`]).
pub fn note(args: std::fmt::Arguments<'_>) {
    let line = args.to_string();
    let line = crate::text::escape_controls_keep_lines(&line);
    let mut err = std::io::stderr().lock();
    let _ = err
        .write_all(line.as_bytes())
        .and_then(|()| err.write_all(b"\n"));
}

/// Shadows std's `eprintln!` in every module declared after this one (lib.rs declares it first),
/// with [`note`]'s behaviour: a closed stderr is not a panic. Exported for the crates above, whose
/// lib.rs forwards to it by a textual macro of their own: a macro reaches another crate only by
/// path, and a path would not shadow std's in their modules.
#[macro_export]
macro_rules! eprintln {
    () => {
        $crate::console::note(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::console::note(format_args!($($arg)*))
    };
}

/// Writes results to stdout. A reader that went away (`| head`) has what it wanted: that is not an
/// error, and the command goes on to finish its work (a run is still saved).
pub fn print_bytes(bytes: &[u8]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::anyhow!("cannot write the results to stdout: {e}"))
        }
        _ => Ok(()),
    }
}
