//! `app.ghostscript`: Ghostscript renders a generated multi-page PostScript document to page
//! images, as Chen et al. (1996) had it preview a 13-page paper. The document is written by
//! osmeter from a fixed seed: pages of justified text in the standard fonts, a figure of curves
//! and filled shapes, and a gray-scale image per page, so rendering exercises fonts, paths, fills
//! and images. Pages are rasterised at 150 dpi in colour (ppmraw) and thrown away (/dev/null),
//! so the figure is the interpreter and rasteriser plus the kernel work they cause.

use super::packages::{need, Need};
use super::program::{version_line, Program};
use super::App;
use crate::harness::env::ProbeEnv;
use crate::results::model::Params;
use crate::results::params::param_u64;
use crate::stats::rng::Rng;
use anyhow::{bail, Context, Result};
use std::fmt::Write;
use std::time::Duration;

const GS: &str = "/usr/bin/gs";
pub const NEEDS: &[Need] = &[need(GS, "ghostscript")];
const SEED: u64 = 0x0C4E_1996;

const WORDS: &[&str] = &[
    "kernel",
    "process",
    "page",
    "cache",
    "interrupt",
    "window",
    "server",
    "thread",
    "buffer",
    "system",
    "call",
    "memory",
    "latency",
    "file",
    "disk",
    "network",
    "protocol",
    "context",
    "switch",
    "address",
    "space",
    "segment",
    "driver",
    "graphics",
    "measured",
    "performance",
    "the",
    "of",
    "and",
    "a",
    "in",
    "to",
    "is",
    "for",
    "with",
    "on",
    "by",
    "that",
];

/// The PostScript document: `pages` pages, the same text for the same page count.
pub fn document(pages: usize) -> String {
    let mut rng = Rng::new(SEED);
    let mut ps = String::from("%!PS-Adobe-3.0\n%%Creator: osmeter\n");
    let _ = writeln!(
        ps,
        "%%Pages: {pages}\n%%BoundingBox: 0 0 612 792\n%%EndComments"
    );
    for page in 1..=pages {
        let _ = writeln!(
            ps,
            "%%Page: {page} {page}\n/Times-Roman findfont 10 scalefont setfont"
        );
        // Two columns of text.
        for col in 0..2 {
            let x = 54 + col * 258;
            for line in 0..58 {
                let y = 740 - line * 11;
                let words: Vec<&str> = (0..8 + rng.below(4))
                    .map(|_| WORDS[rng.below(WORDS.len())])
                    .collect();
                let _ = writeln!(ps, "{x} {y} moveto ({}) show", words.join(" "));
            }
        }
        // A figure: curves and filled shapes in colour.
        let _ = writeln!(ps, "gsave 306 90 translate");
        for i in 0..24 {
            let (a, b, c) = (rng.below(200), rng.below(60), rng.below(200));
            let _ = writeln!(
                ps,
                "{} {} {} setrgbcolor newpath 0 0 moveto {a} {b} {c} {} 240 {} curveto \
                 0.5 setlinewidth stroke",
                (i % 5) as f64 / 5.0,
                (i % 3) as f64 / 3.0,
                (i % 7) as f64 / 7.0,
                rng.below(60),
                rng.below(60)
            );
        }
        let _ = writeln!(
            ps,
            "0.8 0.2 0.2 setrgbcolor newpath -200 -40 moveto 60 0 rlineto 0 30 rlineto closepath \
             fill grestore"
        );
        // A small gray-scale image.
        let _ = writeln!(
            ps,
            "gsave 460 40 translate 96 96 scale 32 32 8 [32 0 0 32 0 0] {{<{}>}} image grestore",
            (0..32 * 32)
                .map(|_| format!("{:02x}", rng.below(256)))
                .collect::<String>()
        );
        let _ = writeln!(ps, "showpage");
    }
    ps.push_str("%%EOF\n");
    ps
}

pub struct Ghostscript {
    pages: usize,
    scratch: std::path::PathBuf,
    program: Option<Program>,
    version: String,
    _dir: Option<tempfile::TempDir>,
}

impl Ghostscript {
    pub fn new(env: &ProbeEnv, params: &Params) -> Result<Ghostscript> {
        let pages = param_u64(params, "pages").context("app.ghostscript")?;
        if !(1..=1000).contains(&pages) {
            bail!("pages={pages}: give 1 to 1000 pages");
        }
        Ok(Ghostscript {
            pages: pages as usize,
            scratch: env.scratch.to_path_buf(),
            program: None,
            version: String::new(),
            _dir: None,
        })
    }
}

impl App for Ghostscript {
    fn needs(&self) -> &'static [Need] {
        NEEDS
    }

    fn start(&mut self) -> Result<()> {
        self.version = version_line(&[GS, "--version"])?;
        let dir = crate::scratch::private_dir(&self.scratch, "ghostscript-")?;
        let doc = dir.path().join("document.ps");
        std::fs::write(&doc, document(self.pages))
            .with_context(|| format!("cannot write {}", doc.display()))?;
        let doc = doc.to_string_lossy().into_owned();
        self.program = Some(Program::new(
            &[
                GS,
                "-q",
                "-dSAFER",
                "-dBATCH",
                "-dNOPAUSE",
                "-sDEVICE=ppmraw",
                "-r150",
                "-sOutputFile=/dev/null",
                &doc,
            ],
            dir.path(),
            Duration::from_secs(300),
        )?);
        self._dir = Some(dir);
        Ok(())
    }

    fn run_once(&mut self, _index: u64) -> Result<()> {
        match &mut self.program {
            Some(p) => p.run(),
            None => bail!("ghostscript was not set up; this is a bug"),
        }
    }

    fn notes(&self) -> Vec<String> {
        vec![format!(
            "Ghostscript {}: {} pages rendered at 150 dpi (ppmraw) to /dev/null",
            self.version, self.pages
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_is_fixed_and_has_its_pages() {
        let a = document(3);
        assert_eq!(a, document(3));
        assert_eq!(a.matches("showpage").count(), 3);
        assert!(a.starts_with("%!PS") && a.ends_with("%%EOF\n"));
        // The first pages do not depend on how many follow.
        assert!(document(4)
            .starts_with(&a[..a.find("%%Page: 3").unwrap()].replace("%%Pages: 3", "%%Pages: 4")));
    }
}
