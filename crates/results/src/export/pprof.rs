//! A run's profiles as pprof reads them: profile.proto, gzip-compressed (`go tool pprof -top FILE`).
//!
//! The stacks are the stored folded stacks (those `--format folded` writes), one sample per stack
//! with its count of samples as its value. Every stack starts at a frame named after its figure,
//! and every sample carries the figure as the label `figure`, so that figures stay apart in a
//! flame graph and `-tagfocus figure=LABEL` picks one.

use super::protobuf::Message;
use super::{ExportOptions, Exporter};
use crate::results::model::Run;
use crate::results::profile::Profiles;
use std::collections::HashMap;
use std::io::{self, Write};

pub struct Pprof;

impl Exporter for Pprof {
    fn name(&self) -> &'static str {
        "pprof"
    }

    fn needs(&self) -> Option<super::Needs> {
        Some(super::PROFILES)
    }

    fn binary(&self) -> bool {
        true
    }

    fn write(&self, run: &Run, _: &ExportOptions, out: &mut dyn Write) -> io::Result<()> {
        let profiles = super::profiles_of(run)?;
        let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
        gz.write_all(&encode(profiles, run))?;
        gz.finish()?;
        Ok(())
    }
}

/// Field numbers of profile.proto (github.com/google/pprof, proto/profile.proto).
mod field {
    pub const PROFILE_SAMPLE_TYPE: u32 = 1;
    pub const PROFILE_SAMPLE: u32 = 2;
    pub const PROFILE_MAPPING: u32 = 3;
    pub const PROFILE_LOCATION: u32 = 4;
    pub const PROFILE_FUNCTION: u32 = 5;
    pub const PROFILE_STRING_TABLE: u32 = 6;
    pub const PROFILE_TIME_NANOS: u32 = 9;
    pub const PROFILE_DURATION_NANOS: u32 = 10;
    pub const PROFILE_COMMENT: u32 = 13;
    pub const VALUE_TYPE_TYPE: u32 = 1;
    pub const VALUE_TYPE_UNIT: u32 = 2;
    pub const SAMPLE_LOCATION_ID: u32 = 1;
    pub const SAMPLE_VALUE: u32 = 2;
    pub const SAMPLE_LABEL: u32 = 3;
    pub const LABEL_KEY: u32 = 1;
    pub const LABEL_STR: u32 = 2;
    pub const MAPPING_ID: u32 = 1;
    pub const MAPPING_FILENAME: u32 = 5;
    pub const MAPPING_HAS_FUNCTIONS: u32 = 7;
    pub const LOCATION_ID: u32 = 1;
    pub const LOCATION_MAPPING_ID: u32 = 2;
    pub const LOCATION_LINE: u32 = 4;
    pub const LINE_FUNCTION_ID: u32 = 1;
    pub const FUNCTION_ID: u32 = 1;
    pub const FUNCTION_NAME: u32 = 2;
    pub const FUNCTION_SYSTEM_NAME: u32 = 3;
}

/// The string table: every string once, referred to by index; index 0 is the empty string, as
/// profile.proto requires.
struct Strings {
    list: Vec<String>,
    index: HashMap<String, u64>,
}

impl Strings {
    fn new() -> Strings {
        Strings {
            list: vec![String::new()],
            index: HashMap::from([(String::new(), 0)]),
        }
    }

    fn of(&mut self, s: &str) -> u64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.list.len() as u64;
        self.list.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

/// Functions by name, each with the one location that stands for it (ids from 1; 0 means none).
#[derive(Default)]
struct Functions {
    names: Vec<String>,
    id: HashMap<String, u64>,
}

impl Functions {
    fn of(&mut self, name: &str) -> u64 {
        if let Some(&id) = self.id.get(name) {
            return id;
        }
        self.names.push(name.to_string());
        let id = self.names.len() as u64;
        self.id.insert(name.to_string(), id);
        id
    }
}

/// The id of the one mapping.
const MAPPING: u64 = 1;

/// The uncompressed profile.proto message of `profiles`, the profiles of `run`.
pub fn encode(profiles: &Profiles, run: &Run) -> Vec<u8> {
    let mut strings = Strings::new();
    let mut functions = Functions::default();
    let mut profile = Message::new();
    // The stored counts are samples, whatever the event sampled (cpu-clock or cycles).
    let mut sample_type = Message::new();
    sample_type
        .uint(field::VALUE_TYPE_TYPE, strings.of("samples"))
        .uint(field::VALUE_TYPE_UNIT, strings.of("count"));
    profile.message(field::PROFILE_SAMPLE_TYPE, &sample_type);
    let figure_key = strings.of("figure");
    for p in &profiles.probes {
        let root = functions.of(&p.label);
        let label_value = strings.of(&p.label);
        for stack in &p.folded {
            // Leaf first, as profile.proto orders a sample's locations.
            let mut locations: Vec<u64> = stack
                .stack
                .split(';')
                .rev()
                .map(|frame| functions.of(frame))
                .collect();
            locations.push(root);
            let mut label = Message::new();
            label
                .uint(field::LABEL_KEY, figure_key)
                .uint(field::LABEL_STR, label_value);
            let mut sample = Message::new();
            sample
                .packed(field::SAMPLE_LOCATION_ID, locations)
                .packed(field::SAMPLE_VALUE, [stack.samples])
                .message(field::SAMPLE_LABEL, &label);
            profile.message(field::PROFILE_SAMPLE, &sample);
        }
    }
    // One mapping that every location belongs to, saying that the functions are already named:
    // pprof then looks for no binary to symbolize them from, and its header names the run.
    let mut mapping = Message::new();
    mapping
        .uint(field::MAPPING_ID, MAPPING)
        .uint(
            field::MAPPING_FILENAME,
            strings.of(&format!("osmeter run {}", run.id)),
        )
        .uint(field::MAPPING_HAS_FUNCTIONS, 1);
    profile.message(field::PROFILE_MAPPING, &mapping);
    for (i, name) in functions.names.iter().enumerate() {
        let id = i as u64 + 1;
        let name_index = strings.of(name);
        let mut function = Message::new();
        function
            .uint(field::FUNCTION_ID, id)
            .uint(field::FUNCTION_NAME, name_index)
            .uint(field::FUNCTION_SYSTEM_NAME, name_index);
        profile.message(field::PROFILE_FUNCTION, &function);
        // One location per function, with the same id: the stored stacks name functions, not
        // addresses, so there is nothing for a mapping to say.
        let mut line = Message::new();
        line.uint(field::LINE_FUNCTION_ID, id);
        let mut location = Message::new();
        location
            .uint(field::LOCATION_ID, id)
            .uint(field::LOCATION_MAPPING_ID, MAPPING)
            .message(field::LOCATION_LINE, &line);
        profile.message(field::PROFILE_LOCATION, &location);
    }
    // When the run started and how long it took (the profiles were taken within it).
    let started = crate::clock::parse_stamp(&run.started_at);
    let finished = run
        .finished_at
        .as_deref()
        .and_then(crate::clock::parse_stamp);
    if let Some(t) = started {
        profile.int(field::PROFILE_TIME_NANOS, t.saturating_mul(1_000_000_000));
        if let Some(end) = finished.filter(|&end| end >= t) {
            profile.int(
                field::PROFILE_DURATION_NANOS,
                (end - t).saturating_mul(1_000_000_000),
            );
        }
    }
    let comments: Vec<u64> = comments(profiles, &run.id)
        .iter()
        .map(|c| strings.of(c))
        .collect();
    profile.packed(field::PROFILE_COMMENT, comments);
    // Last, once every string has its index.
    for s in &strings.list {
        profile.string(field::PROFILE_STRING_TABLE, s);
    }
    profile.into_bytes()
}

/// What `pprof -comments` shows: where the profile comes from and what each figure's samples are.
fn comments(profiles: &Profiles, run_id: &str) -> Vec<String> {
    let mut out = vec![format!(
        "osmeter run {run_id}: one sample per folded stack, its value the samples taken there"
    )];
    for p in &profiles.probes {
        let source = p.source.map_or("nothing", |s| s.name());
        out.push(format!(
            "{}: {} samples on {source}, {:.1} ns of CPU per operation ({:.1} user, {:.1} kernel)",
            p.label, p.samples, p.ns_per_op, p.user_ns_per_op, p.kernel_ns_per_op
        ));
    }
    if let Some(note) = &profiles.kernel_symbols {
        out.push(note.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::protobuf::decode::{fields, packed, Value};
    use super::*;
    use crate::results::profile::{FoldedStack, ProbeProfile, PROFILES_SCHEMA};
    use proptest::prelude::*;

    fn profiles(figures: &[(&str, &[(&str, u64)])]) -> Profiles {
        Profiles {
            schema: PROFILES_SCHEMA.into(),
            probes: figures
                .iter()
                .map(|(label, stacks)| ProbeProfile {
                    label: label.to_string(),
                    folded: stacks
                        .iter()
                        .map(|(stack, samples)| FoldedStack {
                            stack: stack.to_string(),
                            samples: *samples,
                        })
                        .collect(),
                    ..ProbeProfile::default()
                })
                .collect(),
            ..Profiles::default()
        }
    }

    /// A profile read back with the test decoder: (sample type, samples as (frames root first,
    /// value, figure label), string table).
    struct Read {
        sample_type: (String, String),
        samples: Vec<(Vec<String>, u64, String)>,
        strings: Vec<String>,
    }

    fn read(bytes: &[u8]) -> Read {
        let top = fields(bytes);
        let strings: Vec<String> = top
            .iter()
            .filter(|(f, _)| *f == field::PROFILE_STRING_TABLE)
            .map(|(_, v)| v.text())
            .collect();
        let s = |v: &Value| strings[v.uint() as usize].clone();
        let of = |n: u32| top.iter().filter(move |(f, _)| *f == n).map(|(_, v)| v);
        let mut function_name = HashMap::new();
        for f in of(field::PROFILE_FUNCTION) {
            let f = fields(f.bytes());
            assert_eq!(f[1].1, f[2].1, "system name is the name");
            function_name.insert(f[0].1.uint(), s(&f[1].1));
        }
        let mut location_function = HashMap::new();
        for l in of(field::PROFILE_LOCATION) {
            let l = fields(l.bytes());
            assert_eq!(l[1], (field::LOCATION_MAPPING_ID, Value::Varint(MAPPING)));
            let line = fields(l[2].1.bytes());
            location_function.insert(l[0].1.uint(), line[0].1.uint());
        }
        let st = fields(of(field::PROFILE_SAMPLE_TYPE).next().unwrap().bytes());
        let samples = of(field::PROFILE_SAMPLE)
            .map(|sample| {
                let f = fields(sample.bytes());
                let mut frames: Vec<String> = packed(f[0].1.bytes())
                    .iter()
                    .map(|loc| function_name[&location_function[loc]].clone())
                    .collect();
                frames.reverse();
                let value = packed(f[1].1.bytes());
                assert_eq!(value.len(), 1, "one value per sample");
                let label = fields(f[2].1.bytes());
                assert_eq!(s(&label[0].1), "figure");
                (frames, value[0], s(&label[1].1))
            })
            .collect();
        Read {
            sample_type: (s(&st[0].1), s(&st[1].1)),
            samples,
            strings,
        }
    }

    #[test]
    fn a_tiny_profile_reads_back_field_by_field() {
        let p = profiles(&[
            (
                "syscall.null",
                &[("main;getppid;do_syscall_64", 7), ("main", 2)],
            ),
            ("fs.open", &[("main;do_syscall_64", 5)]),
        ]);
        let mut run = crate::results::model::tests::empty_run();
        run.id = "run-1".into();
        run.started_at = "2026-12-07T20:00:00Z".into();
        run.finished_at = Some("2026-12-07T20:00:30Z".into());
        let bytes = encode(&p, &run);
        let back = read(&bytes);
        assert_eq!(back.sample_type, ("samples".into(), "count".into()));
        assert_eq!(back.strings[0], "", "string 0 is the empty string");
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            back.samples,
            vec![
                (
                    names(&["syscall.null", "main", "getppid", "do_syscall_64"]),
                    7,
                    "syscall.null".into()
                ),
                (names(&["syscall.null", "main"]), 2, "syscall.null".into()),
                (
                    names(&["fs.open", "main", "do_syscall_64"]),
                    5,
                    "fs.open".into()
                ),
            ]
        );
        // Each string and each function once: do_syscall_64 is one function in two figures.
        let mut sorted = back.strings.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), back.strings.len());
        let top = fields(&bytes);
        let functions = top
            .iter()
            .filter(|(f, _)| *f == field::PROFILE_FUNCTION)
            .count();
        assert_eq!(functions, 5, "the two labels, main, getppid, do_syscall_64");
        let comments = top
            .iter()
            .find(|(f, _)| *f == field::PROFILE_COMMENT)
            .map(|(_, v)| packed(v.bytes()))
            .unwrap();
        assert!(back.strings[comments[0] as usize].contains("run-1"));
        let int = |n: u32| {
            top.iter()
                .find(|(f, _)| *f == n)
                .map(|(_, v)| v.uint() as i64)
        };
        assert_eq!(
            int(field::PROFILE_TIME_NANOS),
            Some(1_796_673_600_000_000_000)
        );
        assert_eq!(int(field::PROFILE_DURATION_NANOS), Some(30_000_000_000));
    }

    #[test]
    fn no_profiles_is_a_valid_empty_profile() {
        let back = read(&encode(
            &profiles(&[]),
            &crate::results::model::tests::empty_run(),
        ));
        assert!(back.samples.is_empty());
        assert_eq!(back.sample_type.0, "samples");
    }

    fn any_profiles() -> impl Strategy<Value = Profiles> {
        let frame = "[a-z_]{1,8}|0x[0-9a-f]{4}|\\[no stack\\]";
        let stack = (prop::collection::vec(frame, 1..6), 1u64..100_000).prop_map(|(frames, n)| {
            FoldedStack {
                stack: frames.join(";"),
                samples: n,
            }
        });
        let figure = (
            "[a-z]{1,6}\\.[a-z]{1,6}",
            prop::collection::vec(stack, 0..12),
        )
            .prop_map(|(label, folded)| ProbeProfile {
                label,
                folded,
                ..ProbeProfile::default()
            });
        prop::collection::vec(figure, 0..5).prop_map(|probes| Profiles {
            schema: PROFILES_SCHEMA.into(),
            probes,
            ..Profiles::default()
        })
    }

    proptest! {
        /// Every folded stack is one sample, its frames and count kept: the totals of pprof and of
        /// the folded stacks agree, figure by figure.
        #[test]
        fn samples_are_the_folded_stacks(p in any_profiles()) {
            let back = read(&encode(&p, &crate::results::model::tests::empty_run()));
            let folded: Vec<(Vec<String>, u64, String)> = p
                .probes
                .iter()
                .flat_map(|f| {
                    f.folded.iter().map(move |s| {
                        let mut frames = vec![f.label.clone()];
                        frames.extend(s.stack.split(';').map(str::to_string));
                        (frames, s.samples, f.label.clone())
                    })
                })
                .collect();
            prop_assert_eq!(back.samples, folded);
        }
    }
}
