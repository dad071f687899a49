//! Figure values read back from the `figures` table for a set of runs (a fleet's view), and the
//! parsing of a row that both backends share.

use super::schema;
use crate::results::figure::Direction;
use crate::units::Unit;
use anyhow::Result;
use std::collections::{BTreeMap, HashMap};

/// One value of one figure of a run asked for by [`super::Store::figure_values_of`].
#[derive(Debug, Clone, PartialEq)]
pub struct RunValue {
    /// The run's place in the ids asked for.
    pub run: usize,
    pub unit: Unit,
    pub direction: Direction,
    pub value: f64,
    pub interval: Option<[f64; 2]>,
}

/// Values by figure key (see [`super::Store::figure_values_of`]).
pub type FiguresByKey = BTreeMap<String, Vec<RunValue>>;

/// Whether a row's unit and direction (as [`schema::figure_rows`] wrote them) are `unit` and
/// `direction`: a figure keeps its unit, so a row mostly reads as the figure's previous one did,
/// and a fleet's view of hundreds of thousands of rows parses only the rows that differ.
pub(super) fn same_kind(
    unit: Unit,
    direction: Direction,
    row_unit: &[u8],
    row_direction: &[u8],
) -> bool {
    unit.symbol().as_bytes() == row_unit
        && schema::direction_text(direction).as_bytes() == row_direction
}

/// The unit and direction of a row, as [`schema::figure_rows`] wrote them.
pub(super) fn unit_and_direction(
    run_id: &str,
    unit: &str,
    direction: &str,
) -> Result<(Unit, Direction)> {
    use serde::de::{value::Error, IntoDeserializer};
    use serde::Deserialize;
    let bad = |what: &str, text: &str| {
        anyhow::anyhow!("run {run_id} has a figure with an unknown {what} {text:?} in the store")
    };
    let unit = Unit::deserialize(IntoDeserializer::<Error>::into_deserializer(unit))
        .map_err(|_| bad("unit", unit))?;
    let direction = Direction::deserialize(IntoDeserializer::<Error>::into_deserializer(direction))
        .map_err(|_| bad("direction", direction))?;
    Ok((unit, direction))
}

/// A row's interval: both ends or none.
pub(super) fn interval(ci: (Option<f64>, Option<f64>)) -> Option<[f64; 2]> {
    match ci {
        (Some(lo), Some(hi)) => Some([lo, hi]),
        _ => None,
    }
}

/// One row of the `figures` table as a backend reads it: run id, key, unit and direction (their
/// bytes, checked to be text only where they are new), value and interval.
pub(super) type Row<'r> = (
    &'r [u8],
    &'r [u8],
    &'r [u8],
    &'r [u8],
    f64,
    (Option<f64>, Option<f64>),
);

fn text(bytes: &[u8]) -> Result<&str> {
    std::str::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("the store holds a figure whose text is not UTF-8"))
}

/// Files the rows of [`schema::figures_of_runs_statement`] by key. The rows of one run come
/// together, so a run id is looked up among the ids asked for once per run, not once per row;
/// and runs mostly state the same figures in the same order, so a row's key is first tried
/// against the key of the previous run's row at the same place.
pub(super) struct Filing<'a> {
    places: HashMap<&'a str, usize>,
    /// The run whose rows are being read, and its place.
    run: Option<(String, usize)>,
    /// Each key met, with its values, in the order first met.
    slots: Vec<(String, Vec<RunValue>)>,
    slot_of: HashMap<String, usize>,
    /// The slots of the previous run's rows and of the current run's rows so far.
    previous: Vec<usize>,
    current: Vec<usize>,
}

impl<'a> Filing<'a> {
    pub fn new(ids: &[&'a str]) -> Filing<'a> {
        Filing {
            places: ids.iter().enumerate().map(|(i, id)| (*id, i)).collect(),
            run: None,
            slots: Vec::new(),
            slot_of: HashMap::new(),
            previous: Vec::new(),
            current: Vec::new(),
        }
    }

    pub fn file(&mut self, (run_id, key, unit, direction, value, ci): Row) -> Result<()> {
        let run = match &self.run {
            Some((id, place)) if id.as_bytes() == run_id => *place,
            _ => {
                let id = text(run_id)?;
                // Only a run asked for is returned; one that is not would be a backend's bug.
                let Some(&place) = self.places.get(id) else {
                    anyhow::bail!("the store returned run {id}, which was not asked for");
                };
                self.run = Some((id.to_string(), place));
                self.previous = std::mem::take(&mut self.current);
                place
            }
        };
        let slot = match self.previous.get(self.current.len()) {
            Some(&s) if self.slots[s].0.as_bytes() == key => s,
            _ => {
                let key = text(key)?;
                match self.slot_of.get(key) {
                    Some(&s) => s,
                    None => {
                        // Room for a value of every run asked for, as most figures have.
                        let values = Vec::with_capacity(self.places.len());
                        self.slots.push((key.to_string(), values));
                        self.slot_of.insert(key.to_string(), self.slots.len() - 1);
                        self.slots.len() - 1
                    }
                }
            }
        };
        self.current.push(slot);
        let values = &mut self.slots[slot].1;
        let (unit, direction) = match values.last() {
            Some(v) if same_kind(v.unit, v.direction, unit, direction) => (v.unit, v.direction),
            _ => unit_and_direction(text(run_id)?, text(unit)?, text(direction)?)?,
        };
        values.push(RunValue {
            run,
            unit,
            direction,
            value,
            interval: interval(ci),
        });
        Ok(())
    }

    pub fn finish(self) -> FiguresByKey {
        self.slots.into_iter().collect()
    }
}
