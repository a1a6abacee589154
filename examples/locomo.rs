//! LoCoMo turn-level evidence retrieval (`../shared/data/locomo/locomo10.json`).
//!
//! Each conversation is imported as structured conversations (one per LoCoMo session, one
//! message per turn, speaker kept, the session's date as time; image captions appended as
//! `[shares <caption>]`) into its own collection. Every question with evidence is asked and
//! scored: turn-level hit@1/5/10 (an evidence turn in the top k), evidence recall@1/5/10
//! (LoCoMo's definition: the fraction of evidence turns in the top k), MRR, session-level
//! hit@1/5 (sessions ranked by their best turn), per QA category, median query latency.
//! Evidence strings are split on `;`/whitespace and `D30:05` normalised to `D30:5`; ids that
//! name no turn count as misses.
//!
//! Run: `cargo run --release --example locomo` (semantic, lexical, hybrid as shipped, hybrid
//! without conversation context, and reciprocal rank fusion), for every model convdex knows in
//! one run (`-- --model NAME` for one); `-- --sweep` adds lexical weights and context weights.
//! Each table has the development half (conversations 1, 3, 5, 7, 9: settings are chosen on
//! it) and the test half (2, 4, 6, 8, 10: report it) besides all questions.

use std::collections::BTreeMap;
use std::time::Instant;

use convdex::{Context, DocBody, Fusion, Index, Options, SearchMode};

#[path = "support/locomo.rs"]
mod locomo;
use locomo::{Loaded, evidence, import};

/// The conversation session ids (`<sample>-s<n>`) an evidence list points into.
fn evidence_sessions(id: &str, evidence: &[String]) -> Vec<String> {
    evidence.iter().filter_map(|e| e.trim_start_matches('D').split(':').next().map(|n| format!("{id}-s{n}"))).collect()
}

const CATEGORIES: [(u64, &str); 5] =
    [(1, "multi-hop"), (2, "temporal"), (3, "open-domain"), (4, "single-hop"), (5, "adversarial")];

#[derive(Default, Clone)]
struct Score {
    n: usize,
    hit: [f64; 3],
    recall: [f64; 3],
    mrr: f64,
    session_hit: [f64; 2],
}

impl Score {
    fn add(&mut self, other: &Score) {
        self.n += other.n;
        for i in 0..3 {
            self.hit[i] += other.hit[i];
            self.recall[i] += other.recall[i];
        }
        self.mrr += other.mrr;
        self.session_hit[0] += other.session_hit[0];
        self.session_hit[1] += other.session_hit[1];
    }
    fn row(&self, label: &str) -> String {
        let n = self.n.max(1) as f64;
        format!(
            "| {label} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
            self.n,
            self.hit[0] / n,
            self.hit[1] / n,
            self.hit[2] / n,
            self.recall[0] / n,
            self.recall[1] / n,
            self.recall[2] / n,
            self.mrr / n,
            self.session_hit[0] / n,
            self.session_hit[1] / n
        )
    }
}

/// Scores by (half, category): conversations 1, 3, 5, 7, 9 are the development half (settings
/// are chosen on it), 2, 4, 6, 8, 10 the test half.
type ByCat = BTreeMap<(&'static str, u64), Score>;

fn evaluate(
    loaded: &[Loaded],
    search: &dyn Fn(&convdex::Collection, &str) -> convdex::Result<convdex::Hits>,
) -> anyhow::Result<(ByCat, f64)> {
    let mut by_cat: ByCat = BTreeMap::new();
    let mut latencies = Vec::new();
    for (i, l) in loaded.iter().enumerate() {
        let half = if i % 2 == 0 { "dev" } else { "test" };
        let (id, dia) = (&l.id, &l.dia);
        for qa in &l.qa {
            let evidence = evidence(qa);
            if evidence.is_empty() {
                continue;
            }
            let question = qa["question"].as_str().unwrap_or_default();
            let t = Instant::now();
            let hits = search(&l.coll, question)?;
            latencies.push(t.elapsed());
            let ranked: Vec<(String, String)> = hits
                .iter()
                .map(|h| match &h.doc.body {
                    DocBody::Message(m) => {
                        let d = dia.get(&(h.doc.session_id.clone(), m.message_index)).cloned().unwrap_or_default();
                        (d, h.doc.session_id.clone())
                    }
                    _ => Default::default(),
                })
                .collect();
            let mut s = Score { n: 1, ..Default::default() };
            for (i, k) in [1usize, 5, 10].into_iter().enumerate() {
                let top: Vec<&String> = ranked.iter().take(k).map(|r| &r.0).collect();
                let found = evidence.iter().filter(|e| top.contains(e)).count();
                s.hit[i] = if found > 0 { 1.0 } else { 0.0 };
                s.recall[i] = found as f64 / evidence.len() as f64;
            }
            s.mrr = ranked.iter().position(|r| evidence.contains(&r.0)).map_or(0.0, |p| 1.0 / (p + 1) as f64);
            let ev_sessions = evidence_sessions(id, &evidence);
            let mut sessions: Vec<&String> = Vec::new();
            for r in &ranked {
                if !sessions.contains(&&r.1) {
                    sessions.push(&r.1);
                }
            }
            for (i, k) in [1usize, 5].into_iter().enumerate() {
                s.session_hit[i] = if sessions.iter().take(k).any(|x| ev_sessions.contains(x)) { 1.0 } else { 0.0 };
            }
            by_cat.entry((half, qa["category"].as_u64().unwrap_or(0))).or_default().add(&s);
        }
    }
    latencies.sort();
    let median = latencies.get(latencies.len() / 2).map_or(0.0, |d| d.as_secs_f64() * 1e3);
    Ok((by_cat, median))
}

fn table(label: &str, by_cat: &ByCat, median: f64, per_category: bool) {
    println!("\n### {label} — median query latency {median:.1} ms (incl. query embedding)\n");
    println!("| category | n | hit@1 | hit@5 | hit@10 | R@1 | R@5 | R@10 | MRR | session hit@1 | session hit@5 |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut all = Score::default();
    let mut halves: BTreeMap<&str, Score> = BTreeMap::new();
    for (c, name) in CATEGORIES {
        let mut cat = Score::default();
        for half in ["dev", "test"] {
            if let Some(s) = by_cat.get(&(half, c)) {
                cat.add(s);
                halves.entry(half).or_default().add(s);
            }
        }
        if per_category && cat.n > 0 {
            println!("{}", cat.row(&format!("{c} {name}")));
        }
        all.add(&cat);
    }
    println!("{}", all.row("all"));
    for (half, s) in &halves {
        println!("{}", s.row(&format!("{half} half")));
    }
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let sweep = args.iter().any(|a| a == "--sweep");
    let models: Vec<String> = match args.iter().position(|a| a == "--model").and_then(|i| args.get(i + 1)) {
        Some(m) => vec![m.clone()],
        None => convdex::models::Manifest::builtin().models.iter().map(|m| m.name.clone()).collect(),
    };
    let data = locomo::read()?;
    let dir = tempfile::tempdir()?;
    for model in &models {
        let t = Instant::now();
        let mut options = Options::default();
        options.embed = options.embed.model(model.clone());
        let index = Index::open(dir.path().join(model), options)?;
        let loaded = import(&index, &data)?;
        println!(
            "\n## {model}: turns embedded and indexed as (date) speaker, answering the previous turn, said, \"text\" (imported in {:.0} s)",
            t.elapsed().as_secs_f64()
        );
        run_configs(&loaded, sweep, convdex::Ranking::for_model(model))?;
    }
    Ok(())
}

fn run_configs(loaded: &[Loaded], sweep: bool, d: convdex::Ranking) -> anyhow::Result<()> {
    // `d`: the ranking chosen for the model (`Ranking::for_model`).
    let mut configs: Vec<(String, SearchMode, Fusion, Context)> = vec![
        ("semantic".into(), SearchMode::Semantic, d.fusion, d.context),
        ("lexical (BM25)".into(), SearchMode::Lexical, d.fusion, d.context),
        (format!("hybrid (default: {:?}, {:?})", d.fusion, d.context), SearchMode::Hybrid, d.fusion, d.context),
        ("hybrid without context".into(), SearchMode::Hybrid, d.fusion, Context::NONE),
        ("hybrid, RRF k=60, no context".into(), SearchMode::Hybrid, Fusion::Rrf { k: 60.0 }, Context::NONE),
    ];
    if sweep {
        // Choose on the development half only (the `dev half` rows).
        for w in [2.0f32, 4.0, 8.0, 16.0] {
            for (session, neighbours) in [(0.3, 0.2), (0.5, 0.3), (0.7, 0.4)] {
                let context = Context { session, neighbours };
                let fusion = Fusion::Calibrated { lexical_weight: w };
                configs.push((format!("hybrid, λ {w}, {context:?}"), SearchMode::Hybrid, fusion, context));
            }
        }
    }
    for (i, (label, mode, fusion, context)) in configs.iter().enumerate() {
        let (mode, fusion, context) = (*mode, *fusion, *context);
        let (by_cat, median) =
            evaluate(loaded, &|c, q| c.search(q).mode(mode).fusion(fusion).context(context).limit(50).run())?;
        table(label, &by_cat, median, i < 4);
    }
    Ok(())
}
