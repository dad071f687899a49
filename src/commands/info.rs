//! `osmeter info`. (Basic; capability checks land with the meter work.)

use anyhow::Result;

pub fn info(json: bool) -> Result<i32> {
    let fp = crate::results::fingerprint::collect(None);
    if json {
        println!("{}", serde_json::to_string_pretty(&fp)?);
    } else {
        println!("{fp}");
    }
    Ok(0)
}
