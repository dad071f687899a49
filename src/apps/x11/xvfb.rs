//! An Xvfb of osmeter's own: a free display number chosen by the server itself (-displayfd), a
//! fresh MIT-MAGIC-COOKIE-1 in an authority file in the scratch directory (so only osmeter and the
//! clients it starts may connect), no TCP, and a guardian ([`crate::guard`]) that stops it when
//! the workload ends or osmeter dies. Xvfb removes its socket when it gets SIGTERM.

use crate::apps::context::{alive, shell_word, CpuTime};
use crate::guard::Guarded;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use x11rb::rust_connection::{DefaultStream, RustConnection};

const START_TIMEOUT: Duration = Duration::from_secs(20);
const STOP_GRACE: Duration = Duration::from_secs(3);
const COOKIE_NAME: &[u8] = b"MIT-MAGIC-COOKIE-1";

/// The screen every X workload draws on.
pub const SCREEN: (u16, u16) = (1280, 1024);

/// A running Xvfb.
pub struct Xvfb {
    guarded: Guarded,
    pub display: u32,
    pub authority: PathBuf,
    cookie: [u8; 16],
    log: PathBuf,
}

impl Xvfb {
    /// Starts `xvfb` (the Xvfb program) with its files in `dir` (a private directory).
    pub fn start(xvfb: &Path, dir: &Path) -> Result<Xvfb> {
        let cookie = random_cookie()?;
        let authority = dir.join("Xauthority");
        let mut file = crate::scratch::create_new(&authority)?;
        std::io::Write::write_all(&mut file, &authority_entry(&cookie))
            .with_context(|| format!("cannot write {}", authority.display()))?;
        drop(file);
        let number_file = dir.join("display");
        let log = dir.join("xvfb.log");
        let command = format!(
            "exec {} -displayfd 3 -auth {} -nolisten tcp -noreset -screen 0 {}x{}x24 \
             3> {} 2> {}",
            shell_word(xvfb.as_os_str()),
            shell_word(authority.as_os_str()),
            SCREEN.0,
            SCREEN.1,
            shell_word(number_file.as_os_str()),
            shell_word(log.as_os_str()),
        );
        let guarded = Guarded::spawn(&command, 1_000_000, STOP_GRACE)
            .with_context(|| format!("cannot start {}", xvfb.display()))?;
        let mut server = Xvfb {
            guarded,
            display: 0,
            authority,
            cookie,
            log,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            // Xvfb writes the number and a newline once it accepts connections.
            let text = std::fs::read_to_string(&number_file).unwrap_or_default();
            if let Some(line) = text.strip_suffix('\n') {
                server.display = line.trim().parse().with_context(|| {
                    format!("Xvfb reported the display number {line:?}, which is not a number")
                })?;
                return Ok(server);
            }
            if !alive(server.pid()) {
                bail!("Xvfb exited at start-up: {}", server.log_tail());
            }
            if Instant::now() > deadline || crate::interrupt::requested() {
                server.stop();
                bail!(
                    "Xvfb did not start within {} s: {}",
                    START_TIMEOUT.as_secs(),
                    server.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Xvfb's pid (also its process group).
    pub fn pid(&self) -> libc::pid_t {
        self.guarded.shell_pid()
    }

    pub fn cpu_time(&self) -> CpuTime {
        CpuTime::of_group(self.pid())
    }

    /// `:N`, for DISPLAY.
    pub fn name(&self) -> String {
        format!(":{}", self.display)
    }

    /// The server's socket.
    pub fn socket(&self) -> PathBuf {
        PathBuf::from(format!("/tmp/.X11-unix/X{}", self.display))
    }

    /// The environment a client program needs to reach this server.
    pub fn client_env(&self) -> [(&'static str, std::ffi::OsString); 2] {
        [
            ("DISPLAY", self.name().into()),
            ("XAUTHORITY", self.authority.clone().into_os_string()),
        ]
    }

    /// A connection from this process, with the cookie.
    pub fn connect(&self) -> Result<RustConnection> {
        let stream = std::os::unix::net::UnixStream::connect(self.socket())
            .with_context(|| format!("cannot connect to Xvfb on {}", self.name()))?;
        let (stream, _) = DefaultStream::from_unix_stream(stream)?;
        RustConnection::connect_to_stream_with_auth_info(
            stream,
            0,
            COOKIE_NAME.to_vec(),
            self.cookie.to_vec(),
        )
        .with_context(|| format!("Xvfb on {} refused the connection", self.name()))
    }

    /// Stops Xvfb (also done on drop).
    pub fn stop(&mut self) {
        self.guarded.stop();
    }

    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        match lines.len() {
            0 => "(Xvfb wrote nothing)".into(),
            n => lines[n.saturating_sub(3)..].join(" | "),
        }
    }
}

fn random_cookie() -> Result<[u8; 16]> {
    let mut cookie = [0u8; 16];
    // SAFETY: getrandom writes at most cookie.len() bytes into cookie.
    let n = unsafe { libc::getrandom(cookie.as_mut_ptr().cast(), cookie.len(), 0) };
    if n != cookie.len() as isize {
        return Err(std::io::Error::last_os_error()).context("cannot draw an X cookie");
    }
    Ok(cookie)
}

/// One entry of an X authority file that holds for any host and display (family "wild", empty
/// address and number): the file is private to this Xvfb, whose number is not known beforehand.
pub fn authority_entry(cookie: &[u8]) -> Vec<u8> {
    const FAMILY_WILD: u16 = 0xffff;
    let mut out = FAMILY_WILD.to_be_bytes().to_vec();
    for field in [&b""[..], b"", COOKIE_NAME, cookie] {
        out.extend_from_slice(&(field.len() as u16).to_be_bytes());
        out.extend_from_slice(field);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_authority_entry_has_the_files_layout() {
        let e = authority_entry(&[0xab; 16]);
        // family, address "", number "", name, data: big-endian lengths before each.
        assert_eq!(&e[..6], &[0xff, 0xff, 0, 0, 0, 0]);
        assert_eq!(&e[6..8], &[0, 18]);
        assert_eq!(&e[8..26], b"MIT-MAGIC-COOKIE-1");
        assert_eq!(&e[26..28], &[0, 16]);
        assert_eq!(&e[28..], &[0xab; 16]);
    }
}
