//! Whether nginx's workers can reach the site under `--dir`. Run as root, osmeter serves the tree
//! through workers that drop to `nobody`; a `--dir` nobody cannot pass through (mode 0700) made
//! every figure of app.web fail one by one, a minute later, with a 403 each. Checked once before
//! anything is measured instead.

use crate::usage;
use anyhow::Result;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Refuses a `dir` that the web server's unprivileged account could not pass through (every
/// ancestor needs search permission for it). Nothing to check when osmeter is not root: the
/// server then runs as this user, who can reach its own scratch directory; nor when nginx is
/// missing and `install` does not ask for it (app.web is then skipped, saying why).
pub fn check_dir(dir: &Path, install: bool) -> Result<()> {
    if !install && !Path::new(super::NEEDS[0].program).exists() {
        return Ok(());
    }
    let Some(account) = super::unprivileged_account()? else {
        return Ok(());
    };
    let uid = nobody_uid().unwrap_or(65534);
    let Ok(full) = std::fs::canonicalize(dir) else {
        return Ok(()); // a missing --dir is reported by the scratch check, with its own words
    };
    for at in full.ancestors() {
        let Ok(meta) = std::fs::metadata(at) else {
            continue;
        };
        let mode = meta.mode();
        let may_pass = if meta.uid() == uid {
            mode & 0o100 != 0
        } else if meta.gid() == account.gid {
            mode & 0o010 != 0
        } else {
            mode & 0o001 != 0
        };
        if !may_pass {
            return Err(usage!(
                "app.web: nginx's workers run as {} (osmeter is root), and {} cannot pass \
                 through {} (mode {:o}, owner uid {}), on the way to the site under --dir {}; \
                 allow it (chmod o+x {}) or give a --dir everyone may pass through, such as /tmp",
                account.user,
                account.user,
                at.display(),
                mode & 0o7777,
                meta.uid(),
                dir.display(),
                at.display()
            ));
        }
    }
    Ok(())
}

fn nobody_uid() -> Option<u32> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd
        .lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.first() == Some(&"nobody"))
        .and_then(|f| f.get(2)?.parse().ok())
}
