//! A replica of the iii memory worker's record parsing (spec §1.5, §1.6, §1.6a), built with the real
//! serde and serde_json from Debian's crate sources, offline: `Bank::load` reads `memories.jsonl` with
//! `BufReader::lines()`, skips blank lines and parses each other line as the `Memory` struct with
//! `serde_json::from_str`. For every line it prints one of
//!   `R <the record as serde_json writes it again>`   the line is a record
//!   `S <serde_json's error>`                          the line is skipped
//!   `B`                                               a blank line (skipped)
//!   `E`                                               `lines()` failed (invalid UTF-8): the bank is unloadable
//! tests/backends/iii/test_serde_replica.py compiles it into build/ and compares keepgui with it.
use serde::{Deserialize, Serialize};
use std::io::{self, BufRead, Write};

#[derive(Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
enum Confidence { Extracted, Inferred, Stated }

#[derive(Deserialize, Serialize)]
struct Source {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    entry_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent: Option<String>,
}

#[derive(Deserialize, Serialize)]
struct Memory {
    id: String,
    text: String,
    #[serde(default)]
    entities: Vec<String>,
    #[serde(default)]
    tags: Vec<String>,
    confidence: Confidence,
    #[serde(default)]
    corroboration: u32,
    #[serde(default)]
    pinned: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    source: Option<Source>,
    created_at: u64,
    updated_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    invalid_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    superseded_by: Option<String>,
    #[serde(default)]
    revision: u64,
}

fn main() {
    let path = std::env::args().nth(1).unwrap();
    let file = std::fs::File::open(path).unwrap();
    let out = io::stdout();
    let mut out = out.lock();
    for line in io::BufReader::new(file).lines() {
        let line = match line {
            Ok(l) => l,
            Err(_) => { writeln!(out, "E").unwrap(); return; }
        };
        if line.trim().is_empty() { writeln!(out, "B").unwrap(); continue; }
        match serde_json::from_str::<Memory>(&line) {
            Ok(m) => writeln!(out, "R {}", serde_json::to_string(&m).unwrap()).unwrap(),
            Err(e) => writeln!(out, "S {}", e).unwrap(),
        }
    }
}
