//! Interference seen during a sample: interrupts, context switches, steal time. (Placeholder.)

use super::InterferenceReading;

pub struct InterferenceReader;

impl InterferenceReader {
    pub fn new() -> Self {
        InterferenceReader
    }
    pub fn read(&mut self) -> InterferenceReading {
        InterferenceReading::default()
    }
}

impl Default for InterferenceReader {
    fn default() -> Self {
        Self::new()
    }
}
