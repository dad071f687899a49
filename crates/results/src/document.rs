//! The documents of osmeter's other parts (latency, memsim, stat, guest, ab), stored inside a run
//! without this layer naming them.
//!
//! Each part owns its document type and implements [`Document`] for it: its kind, the figures it
//! states, what it could not measure, and how it reads as text. osmeter's root crate, where the
//! parts come together, lists every such type once (`osmeter::DOCUMENT_KINDS`) and hands the list
//! down ([`read_kinds_from`]), so a stored run's `sections` are read back into those types by
//! kind; everything above the results layer reaches a document by its type
//! (`run.sections.get::<LatencyDoc>()`).

use crate::results::figure::{Figure, Unmeasured};
use crate::results::model::RunKind;
use crate::results::timeline::Timeline;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::any::Any;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::OnceLock;

/// A part's document, stored in a run's `sections` under its kind's name.
pub trait Document:
    Serialize
    + DeserializeOwned
    + schemars::JsonSchema
    + Clone
    + Debug
    + PartialEq
    + Send
    + Sync
    + 'static
{
    const KIND: RunKind;
    /// Every figure it states, in the order its own table shows them.
    fn figures(&self) -> Vec<Figure>;
    /// What it meant to state but could not, and why.
    fn unmeasured(&self) -> Vec<Unmeasured> {
        Vec::new()
    }
    /// How the run was taken, in one line of the report's run table.
    fn how(&self) -> String;
    /// What `show` prints of it.
    fn text(&self) -> String;
    /// Its events in time, for the trace viewers; or why it has none (most kinds keep no times).
    fn timeline(&self) -> Result<Timeline, String> {
        Err(format!("a {} run keeps no timeline", Self::KIND))
    }
}

/// A document whose type is known only at run time: what a run's sections hold.
pub trait AnyDocument: Debug + Send + Sync {
    fn kind(&self) -> RunKind;
    fn figures(&self) -> Vec<Figure>;
    fn unmeasured(&self) -> Vec<Unmeasured>;
    fn how(&self) -> String;
    fn text(&self) -> String;
    fn timeline(&self) -> Result<Timeline, String>;
    fn to_json(&self) -> serde_json::Result<serde_json::Value>;
    fn clone_box(&self) -> Box<dyn AnyDocument>;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

impl<D: Document> AnyDocument for D {
    fn kind(&self) -> RunKind {
        D::KIND
    }
    fn figures(&self) -> Vec<Figure> {
        Document::figures(self)
    }
    fn unmeasured(&self) -> Vec<Unmeasured> {
        Document::unmeasured(self)
    }
    fn how(&self) -> String {
        Document::how(self)
    }
    fn text(&self) -> String {
        Document::text(self)
    }
    fn timeline(&self) -> Result<Timeline, String> {
        Document::timeline(self)
    }
    fn to_json(&self) -> serde_json::Result<serde_json::Value> {
        serde_json::to_value(self)
    }
    fn clone_box(&self) -> Box<dyn AnyDocument> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// How to read one kind of document back from JSON; one per [`Document`] type, in the crate
/// root's `DOCUMENT_KINDS`.
pub struct DocumentKind {
    pub kind: RunKind,
    pub parse: fn(serde_json::Value) -> serde_json::Result<Box<dyn AnyDocument>>,
    /// Its JSON Schema, for the run's schema (`osmeter schema run`).
    pub schema: fn(&mut schemars::SchemaGenerator) -> schemars::Schema,
}

impl DocumentKind {
    pub const fn of<D: Document>() -> DocumentKind {
        DocumentKind {
            kind: D::KIND,
            parse: parse_as::<D>,
            schema: schema_of::<D>,
        }
    }
}

fn schema_of<D: Document>(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    generator.subschema_for::<D>()
}

fn parse_as<D: Document>(v: serde_json::Value) -> serde_json::Result<Box<dyn AnyDocument>> {
    Ok(Box::new(serde_json::from_value::<D>(v)?))
}

/// The document types of the parts above this layer, handed down once by the crate that brings
/// the parts together (osmeter's root lists them in `DOCUMENT_KINDS`): this layer cannot name them.
static KINDS: OnceLock<&'static [DocumentKind]> = OnceLock::new();

/// Hands this layer the document types it reads stored sections back into. Called once, before
/// any run is read; the list is the same for the whole life of the process.
pub fn read_kinds_from(kinds: &'static [DocumentKind]) {
    let held = KINDS.get_or_init(|| kinds);
    assert!(
        std::ptr::eq(*held, kinds),
        "the document kinds were handed down twice, as two different lists"
    );
}

fn handed_down_kinds() -> &'static [DocumentKind] {
    // Without the list a stored section would be kept untyped and every reader of it would find
    // nothing: a caller that forgot to hand it down must fail at once, not measure on.
    KINDS.get().expect(
        "a stored document was read, or described, before the document kinds were handed to \
         osmeter-results (results::document::read_kinds_from; osmeter's main does it first)",
    )
}

fn reader_of(kind: RunKind) -> Option<&'static DocumentKind> {
    handed_down_kinds().iter().find(|k| k.kind == kind)
}

/// The documents of a run, one per kind at most. Kinds this osmeter does not know (a newer
/// osmeter's) are kept as they were read and written back unchanged.
#[derive(Debug, Default)]
pub struct Sections {
    docs: BTreeMap<RunKind, Box<dyn AnyDocument>>,
    unknown: BTreeMap<String, serde_json::Value>,
}

impl Sections {
    /// Sections holding one document.
    pub fn of<D: Document>(doc: D) -> Sections {
        let mut s = Sections::default();
        s.put(doc);
        s
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty() && self.unknown.is_empty()
    }

    /// The document of type `D`, if the run holds one.
    pub fn get<D: Document>(&self) -> Option<&D> {
        self.docs.get(&D::KIND)?.as_any().downcast_ref()
    }

    pub fn get_mut<D: Document>(&mut self) -> Option<&mut D> {
        self.docs.get_mut(&D::KIND)?.as_any_mut().downcast_mut()
    }

    /// Holds `doc`, in place of any document of its kind.
    pub fn put<D: Document>(&mut self, doc: D) {
        self.docs.insert(D::KIND, Box::new(doc));
    }

    /// Takes the document of `D`'s kind out, as a `D` (a kind is read back into one type only).
    pub fn take<D: Document>(&mut self) -> Option<D> {
        let doc = self.docs.remove(&D::KIND)?;
        doc.into_any().downcast::<D>().ok().map(|d| *d)
    }

    /// The document of `kind`, whatever its type.
    pub fn of_kind(&self, kind: RunKind) -> Option<&dyn AnyDocument> {
        self.docs.get(&kind).map(|d| d.as_ref())
    }

    /// The kind of the first document held (a run holds one).
    pub fn first_kind(&self) -> Option<RunKind> {
        self.docs.keys().next().copied()
    }

    /// Every document held, in the order of their kinds.
    pub fn iter(&self) -> impl Iterator<Item = &dyn AnyDocument> {
        self.docs.values().map(|d| d.as_ref())
    }

    fn to_json(&self) -> serde_json::Result<serde_json::Map<String, serde_json::Value>> {
        let mut out = serde_json::Map::new();
        for (kind, doc) in &self.docs {
            out.insert(kind.as_str().to_string(), doc.to_json()?);
        }
        for (name, v) in &self.unknown {
            out.insert(name.clone(), v.clone());
        }
        Ok(out)
    }
}

impl Clone for Sections {
    fn clone(&self) -> Sections {
        Sections {
            docs: self.docs.iter().map(|(k, d)| (*k, d.clone_box())).collect(),
            unknown: self.unknown.clone(),
        }
    }
}

impl PartialEq for Sections {
    fn eq(&self, other: &Sections) -> bool {
        match (self.to_json(), other.to_json()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }
}

impl Serialize for Sections {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.to_json()
            .map_err(serde::ser::Error::custom)?
            .serialize(s)
    }
}

/// Each known kind's document under its name; a newer osmeter's kinds may stand beside them.
impl schemars::JsonSchema for Sections {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Sections".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let properties: serde_json::Map<String, serde_json::Value> = handed_down_kinds()
            .iter()
            .map(|k| {
                (
                    k.kind.as_str().to_string(),
                    (k.schema)(generator).to_value(),
                )
            })
            .collect();
        schemars::json_schema!({
            "type": "object",
            "properties": properties,
        })
    }
}

impl<'de> Deserialize<'de> for Sections {
    fn deserialize<De: Deserializer<'de>>(d: De) -> std::result::Result<Sections, De::Error> {
        let raw = BTreeMap::<String, serde_json::Value>::deserialize(d)?;
        let mut out = Sections::default();
        for (name, v) in raw {
            match RunKind::parse(&name).and_then(reader_of) {
                Some(reader) => {
                    let doc = (reader.parse)(v).map_err(|e| {
                        serde::de::Error::custom(format!("the {name} section: {e}"))
                    })?;
                    out.docs.insert(reader.kind, doc);
                }
                None => {
                    out.unknown.insert(name, v);
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::figure::Direction;
    use crate::units::Unit;

    /// A document kind of its own, so these tests do not lean on any part's type.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
    struct Counted {
        n: u64,
    }

    impl Document for Counted {
        const KIND: RunKind = RunKind::Guest;
        fn figures(&self) -> Vec<Figure> {
            vec![Figure::exact(
                "n",
                "test",
                Unit::Count,
                Direction::Lower,
                self.n as f64,
            )]
        }
        fn how(&self) -> String {
            format!("{} counted", self.n)
        }
        fn text(&self) -> String {
            format!("n = {}\n", self.n)
        }
    }

    #[test]
    fn a_document_is_reached_by_its_type_and_unknown_kinds_are_kept() {
        let mut s = Sections::of(Counted { n: 3 });
        assert_eq!(s.get::<Counted>(), Some(&Counted { n: 3 }));
        s.get_mut::<Counted>().unwrap().n = 4;
        assert_eq!(s.of_kind(RunKind::Guest).unwrap().figures()[0].value, 4.0);
        assert_eq!(s.first_kind(), Some(RunKind::Guest));
        let json = serde_json::json!({"counted-by-a-newer-osmeter": {"x": 1}});
        let read: Sections = serde_json::from_value(json.clone()).unwrap();
        assert!(read.first_kind().is_none() && !read.is_empty());
        assert_eq!(serde_json::to_value(&read).unwrap(), json);
        assert_eq!(s.take::<Counted>(), Some(Counted { n: 4 }));
        assert!(s.is_empty());
    }
}
