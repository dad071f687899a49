//! A run's profiles in speedscope's own file format (https://www.speedscope.app/file-format-schema.json):
//! the frames shared, one sampled profile per figure, each stored folded stack a sample weighted
//! by its count of samples.

use super::{ExportOptions, Exporter};
use crate::results::model::Run;
use crate::results::profile::Profiles;
use serde::Serialize;
use std::collections::HashMap;
use std::io::{self, Write};

pub const SCHEMA: &str = "https://www.speedscope.app/file-format-schema.json";

pub struct Speedscope;

impl Exporter for Speedscope {
    fn name(&self) -> &'static str {
        "speedscope"
    }

    fn needs(&self) -> Option<super::Needs> {
        Some(super::PROFILES)
    }

    fn write(&self, run: &Run, _: &ExportOptions, out: &mut dyn Write) -> io::Result<()> {
        let file = file(super::profiles_of(run)?, &run.id);
        serde_json::to_writer(&mut *out, &file)?;
        writeln!(out)
    }
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct File {
    #[serde(rename = "$schema")]
    pub schema: &'static str,
    pub shared: Shared,
    pub profiles: Vec<SampledProfile>,
    pub name: String,
    pub active_profile_index: usize,
    pub exporter: String,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Shared {
    pub frames: Vec<Frame>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Frame {
    pub name: String,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SampledProfile {
    /// Always "sampled".
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub name: String,
    /// "none": the weights are counts of samples, which speedscope's units have no name for.
    pub unit: &'static str,
    pub start_value: u64,
    pub end_value: u64,
    /// Stacks as indices into the shared frames, root first.
    pub samples: Vec<Vec<usize>>,
    pub weights: Vec<u64>,
}

pub fn file(profiles: &Profiles, run_id: &str) -> File {
    let mut frames: Vec<Frame> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    let profiles = profiles
        .probes
        .iter()
        .map(|p| {
            let mut samples = Vec::with_capacity(p.folded.len());
            let mut weights = Vec::with_capacity(p.folded.len());
            for s in &p.folded {
                let stack = s
                    .stack
                    .split(';')
                    .map(|name| {
                        *index.entry(name).or_insert_with(|| {
                            frames.push(Frame { name: name.into() });
                            frames.len() - 1
                        })
                    })
                    .collect();
                samples.push(stack);
                weights.push(s.samples);
            }
            SampledProfile {
                kind: "sampled",
                name: p.label.clone(),
                unit: "none",
                start_value: 0,
                end_value: weights.iter().sum(),
                samples,
                weights,
            }
        })
        .collect();
    File {
        schema: SCHEMA,
        shared: Shared { frames },
        profiles,
        name: format!("osmeter run {run_id}"),
        active_profile_index: 0,
        exporter: format!("osmeter {}", env!("CARGO_PKG_VERSION")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::profile::{FoldedStack, ProbeProfile, PROFILES_SCHEMA};
    use proptest::prelude::*;

    fn profiles(figures: Vec<(String, Vec<(String, u64)>)>) -> Profiles {
        Profiles {
            schema: PROFILES_SCHEMA.into(),
            probes: figures
                .into_iter()
                .map(|(label, stacks)| ProbeProfile {
                    label,
                    folded: stacks
                        .into_iter()
                        .map(|(stack, samples)| FoldedStack { stack, samples })
                        .collect(),
                    ..ProbeProfile::default()
                })
                .collect(),
            ..Profiles::default()
        }
    }

    #[test]
    fn one_sampled_profile_per_figure_over_shared_frames() {
        let p = profiles(vec![
            (
                "syscall.null".into(),
                vec![("main;do_syscall_64".into(), 7), ("main".into(), 2)],
            ),
            ("fs.open".into(), vec![("main;do_sys_open".into(), 5)]),
        ]);
        let v = serde_json::to_value(file(&p, "r1")).unwrap();
        assert_eq!(v["$schema"], SCHEMA);
        assert_eq!(
            v["shared"]["frames"],
            serde_json::json!([{"name": "main"}, {"name": "do_syscall_64"}, {"name": "do_sys_open"}])
        );
        let first = &v["profiles"][0];
        assert_eq!(first["type"], "sampled");
        assert_eq!(first["name"], "syscall.null");
        assert_eq!(first["unit"], "none");
        assert_eq!(first["samples"], serde_json::json!([[0, 1], [0]]));
        assert_eq!(first["weights"], serde_json::json!([7, 2]));
        assert_eq!(first["startValue"], 0);
        assert_eq!(first["endValue"], 9);
        assert_eq!(v["profiles"][1]["samples"], serde_json::json!([[0, 2]]));
        assert_eq!(v["activeProfileIndex"], 0);
    }

    proptest! {
        /// Each profile's samples are its figure's folded stacks, frame for frame, and its end
        /// value their total.
        #[test]
        fn samples_are_the_folded_stacks(
            figures in prop::collection::vec(
                ("[a-z.]{1,8}", prop::collection::vec(("[a-z_]{1,5}(;[a-z_]{1,5}){0,4}", 1u64..1000), 0..8)),
                0..4,
            )
        ) {
            let p = profiles(figures);
            let f = file(&p, "r");
            prop_assert_eq!(f.profiles.len(), p.probes.len());
            for (sp, probe) in f.profiles.iter().zip(&p.probes) {
                let stacks: Vec<String> = sp
                    .samples
                    .iter()
                    .map(|s| s.iter().map(|&i| f.shared.frames[i].name.as_str()).collect::<Vec<_>>().join(";"))
                    .collect();
                let want: Vec<String> = probe.folded.iter().map(|s| s.stack.clone()).collect();
                prop_assert_eq!(stacks, want);
                prop_assert_eq!(sp.end_value, probe.folded.iter().map(|s| s.samples).sum::<u64>());
            }
        }
    }
}
