//! `osmeter compare`'s sides lowered from its arguments: positional ids, `--a`/`--b` lists or
//! `--tag-a`/`--tag-b`.

use crate::cli::CompareArgs;
use crate::results::compare::select::RunSet;

/// Side A and side B. A side given no way is an empty list, refused once both are loaded.
pub fn sides(args: &CompareArgs) -> (RunSet, RunSet) {
    let a = if !args.group_a.is_empty() {
        RunSet::Ids(args.group_a.clone())
    } else if let Some(t) = &args.tag_a {
        RunSet::Tagged(t.clone())
    } else {
        RunSet::Ids(args.runs.iter().take(1).cloned().collect())
    };
    let b = if !args.group_b.is_empty() {
        RunSet::Ids(args.group_b.clone())
    } else if let Some(t) = &args.tag_b {
        RunSet::Tagged(t.clone())
    } else {
        let skip = usize::from(args.group_a.is_empty() && args.tag_a.is_none());
        RunSet::Ids(args.runs.iter().skip(skip).take(1).cloned().collect())
    };
    (a, b)
}
