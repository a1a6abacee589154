//! LoCoMo loading shared by the examples that evaluate on it (`../shared/data/locomo/`):
//! each conversation imported as structured conversations (one per LoCoMo session, one message
//! per turn, speaker kept, the session's date as time; image captions appended as
//! `[shares <caption>]`) into its own collection.

use std::collections::HashMap;
use std::time::Instant;

use convdex::Index;
use convdex::ingest::structured::{Conversation, Turn};
use serde_json::Value;

/// The LoCoMo file, read.
pub fn read() -> anyhow::Result<Vec<Value>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/locomo/locomo10.json");
    Ok(serde_json::from_slice(&std::fs::read(&path)?)?)
}

/// A question's evidence turn ids (`D30:05` normalised to `D30:5`).
pub fn evidence(qa: &Value) -> Vec<String> {
    qa["evidence"].as_array().into_iter().flatten().filter_map(Value::as_str).flat_map(normalise).collect()
}

pub fn normalise(ev: &str) -> Vec<String> {
    ev.split(|c: char| c == ';' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(|s| match s.trim_start_matches('D').split_once(':') {
            Some((a, b)) => format!("D{}:{}", a.trim_start_matches('0'), b.trim_start_matches('0')),
            None => s.to_string(),
        })
        .collect()
}

/// One conversation, imported.
pub struct Loaded {
    pub id: String,
    pub coll: std::sync::Arc<convdex::Collection>,
    /// (conversation id, turn index) -> dia_id
    pub dia: HashMap<(String, u64), String>,
    pub qa: Vec<Value>,
}

/// Imports each conversation into the collection `locomo/<sample id>` of `index` (kept when
/// it already holds sessions, so a data directory can be reused between runs).
pub fn import(index: &Index, data: &[Value]) -> anyhow::Result<Vec<Loaded>> {
    let t0 = Instant::now();
    let mut out = Vec::new();
    for sample in data {
        let id = sample["sample_id"].as_str().unwrap_or("conv");
        let conv = &sample["conversation"];
        let (a, b) = (conv["speaker_a"].as_str().unwrap_or("A"), conv["speaker_b"].as_str().unwrap_or("B"));
        let mut conversations = Vec::new();
        let mut dia: HashMap<(String, u64), String> = HashMap::new();
        let mut n = 1;
        while let Some(turns) = conv.get(format!("session_{n}")).and_then(Value::as_array) {
            let date = conv[format!("session_{n}_date_time")].as_str().unwrap_or_default();
            let time = chrono::NaiveDateTime::parse_from_str(date, "%I:%M %p on %d %B, %Y")
                .map(|t| t.and_utc())
                .unwrap_or_default();
            let cid = format!("{id}-s{n}");
            let mut out = Vec::new();
            for (i, t) in turns.iter().enumerate() {
                let mut text = t["text"].as_str().unwrap_or_default().to_string();
                if let Some(c) = t.get("blip_caption").and_then(Value::as_str) {
                    text.push_str(&format!(" [shares {c}]"));
                }
                if text.trim().is_empty() {
                    text = "(no text)".into();
                }
                dia.insert((cid.clone(), i as u64), t["dia_id"].as_str().unwrap_or_default().to_string());
                out.push(Turn { speaker: t["speaker"].as_str().unwrap_or(a).to_string(), content: text, time });
            }
            conversations.push(Conversation {
                id: cid,
                source: "locomo".into(),
                people: vec![a.to_string(), b.to_string()],
                user: a.to_string(),
                turns: out,
                tags: vec![],
                metadata: vec![],
            });
            n += 1;
        }
        let coll = index.collection("locomo", id)?;
        if coll.sessions()?.is_empty() {
            convdex::import_conversations(&coll, &conversations)?;
        }
        eprintln!("{id}: {} sessions imported, {:.0} s so far", conversations.len(), t0.elapsed().as_secs_f64());
        out.push(Loaded { id: id.to_string(), coll, dia, qa: sample["qa"].as_array().cloned().unwrap_or_default() });
    }
    Ok(out)
}
