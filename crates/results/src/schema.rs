//! The JSON Schema of every kind of document osmeter writes, generated from its Rust type, and the
//! `"$schema"` each document carries so a reader knows which schema, and which version of it, the
//! document follows.
//!
//! A kind's version is raised when a reader of the old schema would misread the new one: a field
//! removed, renamed or given another type. Added optional fields keep the version (readers skip
//! what they do not know). tests/schemas.rs holds the schemas as released (tests/data/schemas/)
//! and fails on a change the version does not own up to.

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema};
use serde::{Serialize, Serializer};

/// Where the schemas are named: an identifier, not a place osmeter fetches anything from (the
/// schema itself comes from `osmeter schema KIND`).
pub const BASE_URI: &str = "https://osmeter.dev/schema";

/// A type written as a JSON document of its own.
pub trait Described: Serialize + JsonSchema {
    /// The kind's name, as `osmeter schema KIND` takes it.
    const KIND: &'static str;
    /// Raised on every change that old readers would misread (see the module's documentation).
    const VERSION: u32;

    fn schema_uri() -> String {
        uri(Self::KIND, Self::VERSION)
    }
}

/// Names a type's kind and version of document, once: `described! { Type => "kind", 1; }`.
#[macro_export]
macro_rules! described {
    ($($ty:ty => $kind:literal, $version:literal;)*) => {
        $(impl $crate::schema::Described for $ty {
            const KIND: &'static str = $kind;
            const VERSION: u32 = $version;
        })*
    };
}

// This layer's kinds; the others are named with the list of every kind, in osmeter's commands.
crate::described! {
    crate::model::Run => "run", 1;
    crate::store::RunInfo => "runs", 1;
    crate::compare::exact::ExactComparison => "compare-exact", 1;
    crate::history::FigureHistory => "history", 1;
    crate::fleet::FleetReport => "fleet", 1;
    crate::kernel_timeline::KernelTimeline => "kernel-timeline", 1;
}

pub fn uri(kind: &str, version: u32) -> String {
    format!("{BASE_URI}/{kind}/v{version}.json")
}

/// A document with the `"$schema"` it follows written first, its own fields after it. Stored runs
/// stay as they were: only what osmeter writes out carries it.
pub struct Stamped<'a, T: ?Sized>(pub &'a T);

impl<T: Described> Serialize for Stamped<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct WithSchema<'b, U> {
            #[serde(rename = "$schema")]
            schema: String,
            #[serde(flatten)]
            doc: &'b U,
        }
        WithSchema {
            schema: T::schema_uri(),
            doc: self.0,
        }
        .serialize(s)
    }
}

/// Each document of a list stamped, for the commands whose output is a JSON array of documents
/// (an array has no place for a key of its own).
pub fn stamped_all<T: Described>(docs: &[T]) -> Vec<Stamped<'_, T>> {
    docs.iter().map(Stamped).collect()
}

/// One kind of document, for `osmeter schema` and the tests that check every kind.
pub struct SchemaKind {
    pub name: &'static str,
    pub version: u32,
    /// Which commands write it.
    pub written_by: &'static str,
    generate: fn() -> Schema,
}

impl SchemaKind {
    pub fn of<T: Described>(written_by: &'static str) -> SchemaKind {
        SchemaKind {
            name: T::KIND,
            version: T::VERSION,
            written_by,
            generate: generate::<T>,
        }
    }

    pub fn uri(&self) -> String {
        uri(self.name, self.version)
    }

    /// The kind's JSON Schema (draft 2020-12), describing the document as osmeter writes it.
    pub fn schema(&self) -> Schema {
        (self.generate)()
    }
}

fn generate<T: Described>() -> Schema {
    // What osmeter writes is described (fields skipped when empty are optional), not what it
    // would accept on reading.
    let mut generator = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator();
    let mut schema = generator.root_schema_for::<T>();
    let uri = T::schema_uri();
    schema.insert("$id".into(), uri.clone().into());
    schema.insert(
        "title".into(),
        format!("osmeter {} document", T::KIND).into(),
    );
    if let Some(properties) = schema
        .ensure_object()
        .entry("properties")
        .or_insert_with(|| serde_json::Value::Object(Default::default()))
        .as_object_mut()
    {
        let mut pinned = serde_json::Map::new();
        pinned.insert("const".into(), uri.into());
        properties.shift_insert(0, "$schema".into(), pinned.into());
    }
    let required = schema
        .ensure_object()
        .entry("required")
        .or_insert_with(|| serde_json::Value::Array(Vec::new()));
    if let Some(list) = required.as_array_mut() {
        list.insert(0, "$schema".into());
    }
    schema
}

/// The kind named `name`, or a usage error naming every kind.
pub fn find<'a>(kinds: &'a [SchemaKind], name: &str) -> anyhow::Result<&'a SchemaKind> {
    kinds.iter().find(|k| k.name == name).ok_or_else(|| {
        let names: Vec<&str> = kinds.iter().map(|k| k.name).collect();
        crate::usage!(
            "no document kind {:?}; the kinds are {}",
            crate::text::escape_controls(name),
            names.join(", ")
        )
    })
}
