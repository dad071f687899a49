//! `--fs ext4|fuse`: the whole run on one file system structure or the other. osmeter makes a fresh
//! journal-less ext4 image in the scratch directory, mounts it with the kernel's ext4 (a loop mount)
//! or serves it with fuse2fs through FUSE, and makes the run's scratch space inside it: the file
//! probes (`fs.*`) and app.andrew then work on that file system. Two runs, one with each, set the
//! two structures side by side (`osmeter compare`, `osmeter report`); each run is tagged `fs=KIND`
//! so that groups of them compare with `--tag-a fs=ext4 --tag-b fs=fuse`.
//!
//! The fuse2fs server runs in a cgroup of its own; every app workload of the run counts it with
//! its own processes. The mount goes when the run ends, also after Ctrl-C or SIGTERM; after
//! SIGKILL the next run in the same `--dir` detaches it ([`crate::scratch`]).

use crate::apps::image::{self, image_mib, Kind, Mounted};
use crate::probes::selection::Selected;
use crate::results::keep::Tag;
use crate::results::model::Params;
use anyhow::Result;
use std::path::Path;

/// The probe whose own `fs` parameter chooses among the scratch directory and images of its own.
const ANDREW: &str = "app.andrew";

/// The mounted image the run's scratch space lives in.
pub struct RunFs {
    mount: Mounted,
}

impl RunFs {
    /// Makes and mounts the image in `scratch` (the run's own scratch directory), big enough for
    /// `disk` bytes, with the FUSE server in a cgroup the run's workloads count.
    pub fn mount(kind: Kind, scratch: &Path, disk: u64) -> Result<RunFs> {
        let mut mount = Mounted::new(kind, scratch, image_mib(disk))?;
        match mount.server_apart() {
            Ok(cgroup) => image::announce_server_cgroup(cgroup),
            Err(e) => eprintln!(
                "osmeter: the fuse2fs server is not counted with the app workloads: {e:#}"
            ),
        }
        Ok(RunFs { mount })
    }

    /// The run's mount for `--fs KIND` (none without it), inside the run's scratch directory and
    /// sized for the selected variants.
    pub fn mount_for(
        kind: Option<Kind>,
        scratch: &crate::scratch::ScratchDir,
        selected: &[Selected],
    ) -> Result<Option<RunFs>> {
        let Some(kind) = kind else {
            return Ok(None);
        };
        let disk = selected
            .iter()
            .flat_map(|s| {
                s.variants
                    .iter()
                    .map(|v| crate::probes::footprint::of(s.probe.id, v).disk)
            })
            .max()
            .unwrap_or(0);
        RunFs::mount(kind, scratch.path(), disk).map(Some)
    }

    /// Where the run's scratch space goes.
    pub fn path(&self) -> &Path {
        self.mount.path()
    }

    /// The file system type the kernel shows for the mount, for the run's fingerprint.
    pub fn fs_type(&self) -> String {
        self.mount
            .fs_type()
            .unwrap_or_else(|| self.mount.kind().name().to_string())
    }
}

impl Drop for RunFs {
    fn drop(&mut self) {
        image::announce_server_cgroup(None);
    }
}

/// Checks before anything runs that `--fs KIND` can work here (a usage error naming what is missing
/// and how to get it); with `--install` the packages are installed later instead.
pub fn check(kind: Kind, install: bool) -> Result<()> {
    let why = if install {
        image::unavailable_but_packages(kind)
    } else {
        image::unavailable(kind)
    };
    match why {
        Some(why) => Err(crate::usage!("--fs {}: {why}", kind.name())),
        None => Ok(()),
    }
}

/// Under `--fs`, app.andrew runs in the run's scratch directory (its `fs=dir`), on the file system
/// asked for, unless `--set fs=...` chose otherwise: not in images inside the image.
pub fn andrew_on_run_fs(selected: &mut [Selected], sets: &[(String, serde_json::Value)]) {
    if sets.iter().any(|(k, _)| k == "fs") {
        return;
    }
    for sel in selected.iter_mut().filter(|s| s.probe.id == ANDREW) {
        let mut out: Vec<Params> = Vec::new();
        for mut v in sel.variants.drain(..) {
            v.insert("fs".into(), "dir".into());
            if !out.contains(&v) {
                out.push(v);
            }
        }
        sel.variants = out;
    }
}

/// The user's tags, plus `fs=KIND` for a run under `--fs` unless the user gave an `fs` tag.
pub fn tags_with_fs(tags: &[Tag], fs: Option<Kind>) -> Vec<Tag> {
    let mut out = tags.to_vec();
    if let Some(kind) = fs {
        if !tags.iter().any(|(k, _)| k == "fs") {
            out.push(("fs".into(), kind.name().into()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fs_tag_is_added_once_and_never_over_the_users() {
        let user = vec![("kernel".to_string(), "6.18".to_string())];
        let t = tags_with_fs(&user, Some(Kind::Fuse));
        assert_eq!(t.last().unwrap(), &("fs".to_string(), "fuse".to_string()));
        assert_eq!(tags_with_fs(&user, None), user);
        let own = vec![("fs".to_string(), "mine".to_string())];
        assert_eq!(tags_with_fs(&own, Some(Kind::Ext4)), own);
    }

    #[test]
    fn andrew_keeps_one_variant_per_phase_in_the_run_directory() {
        let (mut selected, _) =
            crate::probes::selection::select(&["app.andrew".to_string(), "fs".to_string()])
                .unwrap();
        let fs_before: usize = selected
            .iter()
            .filter(|s| s.probe.id != ANDREW)
            .map(|s| s.variants.len())
            .sum();
        andrew_on_run_fs(&mut selected, &[]);
        let andrew = selected.iter().find(|s| s.probe.id == ANDREW).unwrap();
        assert_eq!(andrew.variants.len(), 6);
        assert!(andrew.variants.iter().all(|v| v["fs"] == "dir"));
        let fs_after: usize = selected
            .iter()
            .filter(|s| s.probe.id != ANDREW)
            .map(|s| s.variants.len())
            .sum();
        assert_eq!(fs_before, fs_after);
        // --set fs=fuse is the user's choice: left as it is.
        let (mut again, _) = crate::probes::selection::select(&["app.andrew".to_string()]).unwrap();
        let n = again[0].variants.len();
        andrew_on_run_fs(&mut again, &[("fs".into(), "fuse".into())]);
        assert_eq!(again[0].variants.len(), n);
    }
}
