//! Reading one parameter of a figure, with an error that names it.

use crate::results::model::Params;
use anyhow::{anyhow, Result};

pub fn param_u64(params: &Params, key: &str) -> Result<u64> {
    params
        .get(key)
        .and_then(|v| v.as_u64())
        .ok_or_else(|| anyhow!("parameter {key} is missing or not a number"))
}

pub fn param_str<'a>(params: &'a Params, key: &str) -> Result<&'a str> {
    params
        .get(key)
        .and_then(|v| v.as_str())
        .ok_or_else(|| anyhow!("parameter {key} is missing or not a string"))
}

pub fn param_bool(params: &Params, key: &str) -> Result<bool> {
    params
        .get(key)
        .and_then(|v| v.as_bool())
        .ok_or_else(|| anyhow!("parameter {key} is missing or not a boolean"))
}
