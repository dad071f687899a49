use super::cache::{lookup_path, OpenClose, Read128k, ReadCached, BLOCK, FILE_128K};
use super::meta::{
    CreateDelete, Metadata, SmallFiles, WriteFsync, METADATA_DIRS, METADATA_FILES, SMALL_DIRS,
    SMALL_SIZE,
};
use super::*;
use crate::harness::Workload;

fn entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

/// Files (not directories) anywhere below `dir`.
fn files_below(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                files_below(&e.path())
            } else {
                1
            }
        })
        .sum()
}

#[test]
fn every_probe_and_variant_builds_runs_and_cleans_up() {
    // The full small-file workload takes a while; its quick form covers the code.
    crate::probes::testing::exercise(PROBES, 3, |p, scale| {
        !(scale == Scale::Full && p.id == "fs.small_files")
    });
}

#[test]
fn cached_reads_cycle_through_the_file_and_see_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let size = 4 * BLOCK as u64;
    let mut w = ReadCached::new(dir.path(), size).unwrap();
    assert_eq!(w.bytes_per_op(), Some(BLOCK as u64));
    // Ten blocks of a four-block file: wraps twice, and the last block read is the second.
    w.run(10).unwrap();
    let expect = pattern(2 * BLOCK);
    assert_eq!(w.last_block(), &expect[BLOCK..]);
    assert!(ReadCached::new(dir.path(), 1000).is_err());
    drop(w);
    assert_eq!(entries(dir.path()), 0);
}

#[test]
fn whole_file_reads_return_the_written_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = Read128k::new(dir.path(), 3).unwrap();
    assert_eq!(files_below(w.dir_path()), 3);
    assert_eq!(w.bytes_per_op(), Some(FILE_128K as u64));
    w.run(7).unwrap();
    assert_eq!(w.last_file(), &pattern(FILE_128K)[..]);
    drop(w);
    assert_eq!(entries(dir.path()), 0);
}

#[test]
fn lookup_paths_have_the_asked_depth() {
    assert_eq!(lookup_path(1), "foo");
    assert_eq!(lookup_path(4), "a/b/c/foo");
    assert_eq!(lookup_path(16).split('/').count(), 16);
    let dir = tempfile::tempdir().unwrap();
    assert!(OpenClose::new(dir.path(), 0).is_err());
    let mut w = OpenClose::new(dir.path(), 16).unwrap();
    w.run(5).unwrap();
}

#[test]
fn temporary_file_is_read_back_and_gone_after_each_cycle() {
    let dir = tempfile::tempdir().unwrap();
    for fsync in [false, true] {
        let mut w = CreateDelete::new(dir.path(), 10 << 10, fsync).unwrap();
        w.run(2).unwrap();
        assert_eq!(w.read_back(), &pattern(10 << 10)[..]);
        assert_eq!(entries(w.dir_path()), 0);
    }
}

#[test]
fn small_file_workload_leaves_its_directories_empty() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SmallFiles::new(dir.path(), 100).unwrap();
    assert_eq!(entries(w.dir_path()), SMALL_DIRS);
    w.run(2).unwrap();
    assert_eq!(w.read_back(), &pattern(SMALL_SIZE)[..]);
    assert_eq!(files_below(w.dir_path()), 0);
    assert!(w.max_iters() <= 8);
}

#[test]
fn metadata_creates_128_files_per_operation_and_finish_removes_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = Metadata::new(dir.path()).unwrap();
    assert_eq!(w.max_iters(), METADATA_DIRS as u64);
    assert!(w.prepare(METADATA_DIRS as u64 + 1).is_err());
    w.prepare(3).unwrap();
    w.run(3).unwrap();
    assert_eq!(files_below(w.dir_path()), 3 * METADATA_FILES);
    w.finish().unwrap();
    assert_eq!(files_below(w.dir_path()), 0);
    // Directories are reusable: the next sample creates the same names again.
    w.prepare(3).unwrap();
    w.run(3).unwrap();
    w.finish().unwrap();
    drop(w);
    assert_eq!(entries(dir.path()), 0);
}

#[test]
fn synchronous_overwrite_keeps_the_file_size() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = WriteFsync::new(dir.path(), 4096).unwrap();
    w.run(3).unwrap();
    let sub = std::fs::read_dir(dir.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert_eq!(std::fs::metadata(sub.join("data")).unwrap().len(), 4096);
    assert!(WriteFsync::new(dir.path(), 0).is_err());
}
