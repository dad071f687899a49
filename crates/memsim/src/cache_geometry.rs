//! The geometry and policy of one cache as a machine's configuration (a preset, a `--config`
//! file) states them: size, ways, line and fetch size, replacement, write policy, indexing and the
//! cost of a hit; and the checks that refuse a geometry that cannot be built or would be searched
//! way by way at great length.

use serde::{Deserialize, Serialize};

// How a set chooses its victim. (Not a doc comment: that would be a description in the released
// JSON Schemas of memsim's and run's documents.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Replacement {
    Lru,
    Fifo,
    Random,
}

/// Geometry and policy of one cache.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    /// Bytes.
    pub size: u64,
    /// Ways; 0 for fully associative.
    pub assoc: u32,
    /// Line size in bytes.
    pub line: u32,
    /// Bytes brought in on a miss (aligned, a multiple of the line); 0 means one line.
    #[serde(default)]
    pub fetch: u32,
    #[serde(default = "lru")]
    pub replacement: Replacement,
    #[serde(default)]
    pub seed: u64,
    #[serde(default = "yes")]
    pub write_back: bool,
    #[serde(default = "yes")]
    pub write_allocate: bool,
    /// Indexed and tagged by physical address (else virtual).
    #[serde(default = "yes")]
    pub physical: bool,
    /// Stall cycles when a miss in the level above is satisfied here.
    #[serde(default)]
    pub hit_cycles: u32,
}

fn lru() -> Replacement {
    Replacement::Lru
}
fn yes() -> bool {
    true
}

impl CacheConfig {
    pub fn new(size: u64, assoc: u32, line: u32) -> CacheConfig {
        CacheConfig {
            size,
            assoc,
            line,
            fetch: 0,
            replacement: Replacement::Lru,
            seed: 0,
            write_back: true,
            write_allocate: true,
            physical: true,
            hit_cycles: 0,
        }
    }

    pub fn lines(&self) -> u64 {
        self.size / u64::from(self.line)
    }

    pub fn fetch_bytes(&self) -> u32 {
        if self.fetch == 0 {
            self.line
        } else {
            self.fetch
        }
    }

    /// Checks that the geometry can be built; the message says what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        if self.line == 0 || !self.line.is_power_of_two() {
            return Err(format!("line size {} is not a power of two", self.line));
        }
        let ways = if self.assoc == 0 {
            1
        } else {
            u64::from(self.assoc)
        };
        if self.size == 0 || self.size % (u64::from(self.line) * ways) != 0 {
            return Err(format!(
                "size {} is not a multiple of line size {} times associativity {}",
                self.size, self.line, ways
            ));
        }
        if self.assoc != 0 && u64::from(self.assoc) > self.lines() {
            return Err(format!(
                "associativity {} exceeds the {} lines",
                self.assoc,
                self.lines()
            ));
        }
        let f = self.fetch_bytes();
        if !f.is_power_of_two() || f < self.line || u64::from(f) > self.size {
            return Err(format!(
                "fetch size {f} must be a power of two, at least the line size {} and at most the cache size",
                self.line
            ));
        }
        // Every miss inserts each line of the fetch block.
        if f / self.line > MAX_FETCH_LINES {
            return Err(format!(
                "fetch size {f} is {} lines of {} bytes; at most {MAX_FETCH_LINES} lines come in on one miss",
                f / self.line,
                self.line
            ));
        }
        check_ways(self.lines(), self.assoc, self.replacement)
    }
}

/// Lines one miss may bring in (a page of 4-byte lines).
pub const MAX_FETCH_LINES: u32 = 1024;
/// Ways of a set searched one by one: more would make every access a long scan. A fully
/// associative LRU store of any size is exempt (it is found through a hash map).
pub const MAX_SEARCHED_WAYS: u64 = 4096;

/// Refuses geometries whose sets would be searched way by way at great length.
pub fn check_ways(entries: u64, assoc: u32, repl: Replacement) -> Result<(), String> {
    let ways = if assoc == 0 {
        entries
    } else {
        u64::from(assoc)
    };
    let hashed = ways == entries && repl == Replacement::Lru;
    if ways > MAX_SEARCHED_WAYS && !hashed {
        return Err(format!(
            "{ways} ways with {} replacement: at most {MAX_SEARCHED_WAYS} ways are searched one by one (only a fully associative LRU store may be larger)",
            match repl {
                Replacement::Lru => "LRU",
                Replacement::Fifo => "FIFO",
                Replacement::Random => "random",
            }
        ));
    }
    Ok(())
}
