//! `osmeter stat`. (Lands in a later commit.)

use crate::cli::StatArgs;
use anyhow::{bail, Result};

pub fn stat(_args: &StatArgs) -> Result<i32> {
    bail!("osmeter stat is not built yet")
}
