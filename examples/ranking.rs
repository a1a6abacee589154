//! How results are ranked, measured on three sets at once, each split into a development half
//! (to choose settings on) and a test half (to report):
//!
//! - **LoCoMo as ten projects**: the ten conversations of `../shared/data/locomo/` imported as
//!   ten projects of one tenant; every question asked across all of them (the default search).
//!   Evidence recall@10, hit@5, and how often the top hit comes from another conversation.
//!   Development: conversations 1, 3, 5, 7, 9; test: 2, 4, 6, 8, 10.
//! - **Claude Code cases** (`tests/data/search_queries.json`, `lexical_queries.json`:
//!   paraphrases, identifiers, paths, errors, phrases): the whole transcript corpus of
//!   `../shared/data/transcripts/` indexed (with the Codex, Gemini and Aider histories of
//!   `../shared/data/agents/`), every case asked across all projects; the expected message in the
//!   top 5. Development: even positions in each file; test: odd.
//! - **Multilingual set** (`tests/data/multilingual.tsv`: Chinese, Japanese, Korean and mixed
//!   sessions, a half of the questions cross-lingual): the expected session among the top 5
//!   hits, and among the first 5 sessions as `Index::search_sessions` groups them. The split
//!   is the file's own column.
//!
//! Run: `cargo run --release --example ranking -- [--model NAME] [--data DIR] [--sweep] [--fit]`.
//! `--model` chooses the embedding model (default: convdex's default, multilingual-e5-small);
//! `--data` keeps the indexes between runs (default: a temporary directory; one sub-directory
//! per model; indexes another build of the example made are rebuilt); `--multilingual FILE`
//! asks another multilingual set of the same columns (default `tests/data/multilingual.tsv`;
//! `tests/data/multilingual_2.tsv` to `_11.tsv` are the second to eleventh sets); `--sweep` adds
//! fusion and context settings; `--fit` fits the model's semantic, lexical and hybrid relevance
//! curves on the development halves (the constants of `src/search/tuned.rs`) and prints how the
//! relevance shown reads against answers on the test halves; `--translation` adds
//! lexical and hybrid search with translation weights (`RANKING_TRANSLATION=w,…`); `--gloss`
//! semantic and hybrid search with gloss weights (`RANKING_GLOSS=w,…`); `--dev-only` asks
//! the development halves only (to explore without looking at the test halves).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use convdex::{Context, DocBody, Fusion, Index, IndexOptions, Options, Query, Ranking, SearchMode};
use serde_json::Value;

#[path = "support/locomo.rs"]
mod locomo;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Split {
    Dev,
    Test,
}

/// A question with the message uuids (or the session) that answer it.
struct Case {
    split: Split,
    query: String,
    session: String,
    uuids: Vec<String>,
    kind: String,
}

/// Session id of a transcript path (main file or sub-agent file), as convdex names it.
fn session_of(transcript: &str) -> String {
    let p = Path::new(transcript);
    if p.parent().and_then(Path::file_name).is_some_and(|n| n == "subagents") {
        p.parent().and_then(Path::parent).and_then(Path::file_name).unwrap().to_string_lossy().into_owned()
    } else {
        p.file_stem().unwrap().to_string_lossy().into_owned()
    }
}

/// Every project folder under `dir`: a folder with session files, or with session folders
/// holding only sub-agents.
fn project_folders(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut children: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    children.sort();
    let sessions = children.iter().any(|p| p.extension().is_some_and(|e| e == "jsonl") || p.join("subagents").is_dir());
    if sessions && dir.file_name().is_none_or(|n| n != "subagents") {
        out.push(dir.to_path_buf());
        return;
    }
    for c in children.iter().filter(|p| p.is_dir()) {
        project_folders(c, out);
    }
}

fn claude_cases(root: &Path) -> anyhow::Result<Vec<Case>> {
    let mut out = Vec::new();
    for (file, kind_of) in [("search_queries.json", None), ("lexical_queries.json", Some("kind"))] {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(root.join("tests/data").join(file))?)?;
        for (i, q) in v["queries"].as_array().into_iter().flatten().enumerate() {
            let transcript = q["transcript"].as_str().unwrap_or_default();
            out.push(Case {
                split: if i % 2 == 0 { Split::Dev } else { Split::Test },
                query: q["query"].as_str().unwrap_or_default().to_string(),
                session: session_of(transcript),
                uuids: q["uuids"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect(),
                kind: kind_of.and_then(|k| q[k].as_str()).unwrap_or("paraphrase").to_string(),
            });
        }
    }
    Ok(out)
}

fn multilingual_cases(file: &Path) -> anyhow::Result<Vec<Case>> {
    let text = std::fs::read_to_string(file).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let f: Vec<&str> = line.split('\t').collect();
        anyhow::ensure!(f.len() == 7, "multilingual.tsv: 7 columns expected: {line}");
        out.push(Case {
            split: if f[1] == "dev" { Split::Dev } else { Split::Test },
            kind: format!("{} {}", f[2], f[3]),
            session: f[5].to_string(),
            query: f[6].to_string(),
            uuids: vec![],
        });
    }
    Ok(out)
}

/// A ranking weight swept by a flag (`--translation`, `--gloss`): its env var, the weights tried
/// by default, the two modes it is tried in, and how it is put into a [`Ranking`].
struct Weighted {
    name: &'static str,
    var: &'static str,
    default: &'static [f32],
    modes: [SearchMode; 2],
    set: fn(&mut Ranking, f32),
}

/// One ranking configuration.
struct Config {
    label: String,
    mode: SearchMode,
    ranking: Ranking,
}

/// Every LoCoMo question with evidence: its half (conversations 1, 3, 5… development), its
/// conversation, its text and its evidence turns.
/// With `dev_only`, the development half only.
fn locomo_questions(
    loaded: &[locomo::Loaded],
    dev_only: bool,
) -> impl Iterator<Item = (Split, &locomo::Loaded, &str, Vec<String>)> {
    loaded.iter().enumerate().filter(move |(i, _)| !dev_only || i % 2 == 0).flat_map(|(i, l)| {
        let split = if i % 2 == 0 { Split::Dev } else { Split::Test };
        l.qa.iter().filter_map(move |qa| {
            let evidence = locomo::evidence(qa);
            (!evidence.is_empty()).then(|| (split, l, qa["question"].as_str().unwrap_or_default(), evidence))
        })
    })
}

fn query(text: &str, mode: SearchMode, ranking: Ranking, limit: usize) -> Query {
    let mut q = Query::new(text);
    q.mode = Some(mode);
    q.ranking = ranking;
    q.limit = limit;
    q
}

#[derive(Default, Clone, Copy)]
struct Tally {
    n: f64,
    recall10: f64,
    hit5: f64,
    wrong_top: f64,
}

impl Tally {
    fn add(&mut self, o: Tally) {
        self.n += o.n;
        self.recall10 += o.recall10;
        self.hit5 += o.hit5;
        self.wrong_top += o.wrong_top;
    }
}

/// (score, relevance, answered) of the top-10 hits, per set, for calibration.
type Points = Vec<(f32, u8, bool)>;

struct Results {
    locomo: BTreeMap<Split, Tally>,
    claude: BTreeMap<Split, (usize, usize)>,
    multilingual: BTreeMap<Split, (usize, usize)>,
    /// The multilingual set asked with `Index::search_sessions`: the expected session among
    /// the first five sessions.
    sessions: BTreeMap<Split, (usize, usize)>,
    points: BTreeMap<(Split, &'static str), Points>,
    misses: Vec<String>,
}

fn evaluate(
    claude: &Index,
    loc: &Index,
    loaded: &[locomo::Loaded],
    cc: &[Case],
    ml: &[Case],
    c: &Config,
    dev_only: bool,
) -> anyhow::Result<Results> {
    let mut r = Results {
        locomo: BTreeMap::new(),
        claude: BTreeMap::new(),
        multilingual: BTreeMap::new(),
        sessions: BTreeMap::new(),
        points: BTreeMap::new(),
        misses: Vec::new(),
    };
    for (split, l, question, evidence) in locomo_questions(loaded, dev_only) {
        let q = query(question, c.mode, c.ranking, 10);
        let hits = loc.search(None, &q)?.found;
        let ids: Vec<(String, String, bool)> = hits
            .iter()
            .map(|h| {
                let dia = match &h.hit.doc.body {
                    DocBody::Message(m) => {
                        l.dia.get(&(h.hit.doc.session_id.clone(), m.message_index)).cloned().unwrap_or_default()
                    }
                    _ => String::new(),
                };
                let mine = h.project == l.id;
                (dia, h.project.clone(), mine)
            })
            .collect();
        let answered = |x: &(String, String, bool)| x.2 && evidence.contains(&x.0);
        let found = evidence.iter().filter(|e| ids.iter().any(|x| x.2 && &&x.0 == e)).count();
        let t = Tally {
            n: 1.0,
            recall10: found as f64 / evidence.len() as f64,
            hit5: if ids.iter().take(5).any(answered) { 1.0 } else { 0.0 },
            wrong_top: if ids.first().is_some_and(|x| !x.2) { 1.0 } else { 0.0 },
        };
        r.locomo.entry(split).or_default().add(t);
        let pts = r.points.entry((split, "locomo")).or_default();
        pts.extend(hits.iter().zip(&ids).map(|(h, x)| (h.hit.score, h.hit.relevance, answered(x))));
    }
    for (set, cases) in [("claude", cc), ("multilingual", ml)] {
        for case in cases.iter().filter(|c| !dev_only || c.split == Split::Dev) {
            // One search serves both measures: the first ten hits of the sessions' pool are the
            // hits at limit 10 (the first hits do not depend on the limit).
            let mut pool = claude.search(None, &convdex::pool_query(&query(&case.query, c.mode, c.ranking, 5)))?.found;
            let sessions = (set == "multilingual").then(|| convdex::group_sessions(pool.clone(), 5));
            pool.truncate(10);
            let hits = pool;
            let answered = |h: &convdex::ProjectHit| match (&h.hit.doc.body, case.uuids.is_empty()) {
                (_, true) => h.hit.doc.session_id == case.session,
                (DocBody::Message(m), false) => case.uuids.contains(&m.message_uuid),
                _ => false,
            };
            let ok = hits.iter().take(5).any(answered);
            if let Some(sessions) = sessions {
                let e = r.sessions.entry(case.split).or_default();
                e.0 += usize::from(sessions.iter().any(|s| s.session_id == case.session));
                e.1 += 1;
            }
            let tally = if set == "claude" { &mut r.claude } else { &mut r.multilingual };
            let e = tally.entry(case.split).or_default();
            e.0 += usize::from(ok);
            e.1 += 1;
            if !ok {
                r.misses.push(format!("{set} {:?} [{}] {}", case.split, case.kind, case.query));
            }
            let pts =
                r.points.entry((case.split, if set == "claude" { "claude" } else { "multilingual" })).or_default();
            pts.extend(hits.iter().map(|h| (h.hit.score, h.hit.relevance, answered(h))));
        }
    }
    Ok(r)
}

fn row(label: &str, split: Split, r: &Results) -> String {
    let l = r.locomo.get(&split).copied().unwrap_or_default();
    let n = l.n.max(1.0);
    let rate = |m: &BTreeMap<Split, (usize, usize)>| {
        let (a, b) = m.get(&split).copied().unwrap_or_default();
        format!("{a}/{b} ({:.2})", a as f64 / b.max(1) as f64)
    };
    format!(
        "| {label} | {split:?} | {:.3} | {:.3} | {:.3} | {} | {} | {} |",
        l.recall10 / n,
        l.hit5 / n,
        l.wrong_top / n,
        rate(&r.claude),
        rate(&r.multilingual),
        rate(&r.sessions)
    )
}

/// Fits `p = 1 / (1 + e^−(a·s + b))` by maximum likelihood (Newton's method on standardised
/// scores, halving steps that do not improve) over the pooled hits of the sets, each hit
/// weighing the same: the relevance then reads as the share of answers among hits shown with
/// it, whatever set they came from. (Each set weighing the same let the few Claude Code and
/// multilingual hits, most of them answers, pull the curve up against LoCoMo's many.)
fn fit(sets: &[&Points]) -> (f64, f64) {
    let all: Vec<(f64, f64, f64)> = sets
        .iter()
        .flat_map(|pts| pts.iter().map(|&(s, _, y)| (f64::from(s), if y { 1.0 } else { 0.0 }, 1.0)))
        .collect();
    let total: f64 = all.iter().map(|x| x.2).sum();
    let mean = all.iter().map(|x| x.0 * x.2).sum::<f64>() / total;
    let sd = (all.iter().map(|x| (x.0 - mean).powi(2) * x.2).sum::<f64>() / total).sqrt().max(1e-9);
    let loss = |a: f64, b: f64| -> f64 {
        all.iter()
            .map(|&(s, y, w)| {
                let t = a * (s - mean) / sd + b;
                w * ((1.0 + t.exp()).ln() - y * t)
            })
            .sum::<f64>()
            + 1e-6 * a * a
    };
    let (mut a, mut b) = (0.0f64, 0.0f64);
    for _ in 0..100 {
        let (mut ga, mut gb, mut haa, mut hab, mut hbb) = (2e-6 * a, 0.0, 2e-6, 0.0, 1e-9);
        for &(s, y, w) in &all {
            let x = (s - mean) / sd;
            let p = 1.0 / (1.0 + (-(a * x + b)).exp());
            ga += w * (p - y) * x;
            gb += w * (p - y);
            let v = w * p * (1.0 - p);
            haa += v * x * x;
            hab += v * x;
            hbb += v;
        }
        let det = haa * hbb - hab * hab;
        let (da, db) = ((hbb * ga - hab * gb) / det, (haa * gb - hab * ga) / det);
        let mut step = 1.0;
        let before = loss(a, b);
        while step > 1e-6 && loss(a - step * da, b - step * db) > before {
            step /= 2.0;
        }
        a -= step * da;
        b -= step * db;
        if (step * da).abs() + (step * db).abs() < 1e-9 {
            break;
        }
    }
    // Back to raw scores: a·(s − mean)/sd + b.
    (a / sd, b - a * mean / sd)
}

fn reliability(label: &str, pts: &[&Points]) {
    println!("\n{label}: relevance shown vs answers among those hits (test halves)\n");
    println!("| relevance | hits | mean relevance | answers |");
    println!("|---|---:|---:|---:|");
    for (lo, hi) in [(0, 10), (10, 30), (30, 50), (50, 70), (70, 90), (90, 101)] {
        let inside: Vec<&(f32, u8, bool)> =
            pts.iter().flat_map(|p| p.iter()).filter(|x| (lo..hi).contains(&u32::from(x.1))).collect();
        if inside.is_empty() {
            continue;
        }
        let mean = inside.iter().map(|x| f64::from(x.1)).sum::<f64>() / inside.len() as f64;
        let yes = inside.iter().filter(|x| x.2).count() as f64 / inside.len() as f64;
        println!("| {lo}–{} | {} | {mean:.0} | {:.0}% |", hi.min(100), inside.len(), yes * 100.0);
    }
}

/// What identifies this build of the example: a hash of its own executable. Indexes kept with
/// `--data` are reused only by the build that made them.
fn build_stamp() -> anyhow::Result<String> {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::fs::read(std::env::current_exe()?)?.hash(&mut h);
    Ok(format!("{:016x}\n", h.finish()))
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let flag = |f: &str| args.iter().any(|a| a == f);
    // The value after a flag (`--data DIR`, `--model NAME`, `--multilingual FILE`).
    let value = |f: &str| args.iter().position(|a| a == f).and_then(|i| args.get(i + 1));
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir()?;
    let data = value("--data").map(PathBuf::from);
    let mut options = Options::default();
    if let Some(m) = value("--model") {
        options.embed = options.embed.model(m.clone());
    }
    let model = options.embed.spec()?.name.clone();
    let data = data.unwrap_or_else(|| tmp.path().to_path_buf()).join(&model);
    let stamp = build_stamp()?;
    let stamp_file = data.join("built-by");
    if data.exists() && std::fs::read_to_string(&stamp_file).ok().as_deref() != Some(stamp.as_str()) {
        // Indexes another build of this example made (or an interrupted build) may lack what
        // this build puts in them: rebuild rather than measure them.
        eprintln!("{}: built by another build of this example; rebuilding", data.display());
        std::fs::remove_dir_all(&data)?;
    }
    let t0 = Instant::now();
    let claude = Index::open(data.join("claude"), options.clone())?;
    let mut folders = Vec::new();
    project_folders(&root.join("../shared/data/transcripts"), &mut folders);
    // Codex, Gemini and Aider histories beside them (the eleventh multilingual set asks about
    // Codex rollouts; the others are more distractors, as on a machine with several agents).
    folders.push(root.join("../shared/data/agents"));
    let report =
        convdex::index_paths(&claude, &folders, &IndexOptions { tenant: Some("eval".into()), ..Default::default() })?;
    eprintln!(
        "transcripts: {} new sessions, {} collections, {:.0} s",
        report.sessions_new,
        claude.collections()?.len(),
        t0.elapsed().as_secs_f64()
    );
    let loc = Index::open(data.join("locomo"), options)?;
    let loaded = locomo::import(&loc, &locomo::read()?)?;
    std::fs::write(&stamp_file, &stamp)?;
    let cc = claude_cases(&root)?;
    let ml_file = value("--multilingual").map_or_else(|| root.join("tests/data/multilingual.tsv"), PathBuf::from);
    let ml = multilingual_cases(&ml_file)?;
    let sessions: HashSet<String> = claude.each(None, |_, c| c.sessions())?.found.into_iter().flatten().collect();
    for c in cc.iter().chain(&ml) {
        anyhow::ensure!(sessions.contains(&c.session), "session {} of `{}` is not indexed", c.session, c.query);
    }
    // The ranking chosen for this model (`Ranking::for_model`; e5's is `Ranking::default`).
    let d = Ranking::for_model(&model);
    let only_sweep = flag("--only-sweep");
    let mut configs = vec![
        Config { label: "semantic".into(), mode: SearchMode::Semantic, ranking: d },
        Config { label: "lexical".into(), mode: SearchMode::Lexical, ranking: d },
        Config {
            label: format!(
                "hybrid (default: {:?}, {:?}, translation {}, gloss {})",
                d.fusion, d.context, d.translation, d.gloss
            ),
            mode: SearchMode::Hybrid,
            ranking: d,
        },
        Config {
            label: "hybrid, pool z-score blend w=0.5 (before)".into(),
            mode: SearchMode::Hybrid,
            ranking: Ranking { fusion: Fusion::Blend { semantic_weight: 0.5 }, ..d },
        },
        Config {
            label: "hybrid, RRF k=60".into(),
            mode: SearchMode::Hybrid,
            ranking: Ranking { fusion: Fusion::Rrf { k: 60.0 }, ..d },
        },
        Config {
            label: format!("hybrid, leaders {}", if d.leaders { "off" } else { "kept" }),
            mode: SearchMode::Hybrid,
            ranking: Ranking { leaders: !d.leaders, ..d },
        },
    ];
    if only_sweep {
        configs.clear();
    }
    // `RANKING_TRANSLATION=w,...` (lexical and hybrid search) and `RANKING_GLOSS=w,...` (semantic
    // and hybrid search) replace the weights tried.
    let weighted = [
        Weighted {
            name: "translation",
            var: "RANKING_TRANSLATION",
            default: &[0.0, 0.25, 0.5, 0.75, 1.0],
            modes: [SearchMode::Lexical, SearchMode::Hybrid],
            set: |r, w| r.translation = w,
        },
        Weighted {
            name: "gloss",
            var: "RANKING_GLOSS",
            default: &[0.0, 0.25, 0.5, 1.0],
            modes: [SearchMode::Semantic, SearchMode::Hybrid],
            set: |r, w| r.gloss = w,
        },
    ];
    for Weighted { name, var, default, modes, set } in weighted {
        if !flag(&format!("--{name}")) {
            continue;
        }
        let weights: Vec<f32> = match std::env::var(var) {
            Ok(v) => v.split(',').filter_map(|x| x.parse().ok()).collect(),
            Err(_) => default.to_vec(),
        };
        for w in weights {
            for mode in modes {
                let mut ranking = d;
                set(&mut ranking, w);
                configs.push(Config { label: format!("{mode:?}, {name} {w}").to_lowercase(), mode, ranking });
            }
        }
    }
    if flag("--sweep") || only_sweep {
        // `RANKING_SWEEP=w:s:n,...` (lexical weight, session, neighbours) replaces the grid.
        let grid: Vec<(f32, f32, f32)> = match std::env::var("RANKING_SWEEP") {
            Ok(v) => v
                .split(',')
                .filter_map(|t| {
                    let p: Vec<f32> = t.split(':').filter_map(|x| x.parse().ok()).collect();
                    (p.len() == 3).then(|| (p[0], p[1], p[2]))
                })
                .collect(),
            Err(_) => [2.0f32, 4.0, 8.0, 12.0, 16.0]
                .iter()
                .flat_map(|&w| [(0.0f32, 0.0f32), (0.3, 0.2), (0.5, 0.3), (0.3, 0.0)].map(|(s, n)| (w, s, n)))
                .collect(),
        };
        for (w, s, n) in grid {
            let ranking = Ranking {
                fusion: Fusion::Calibrated { lexical_weight: w },
                context: Context { session: s, neighbours: n },
                ..d
            };
            configs.push(Config {
                label: format!("hybrid, lexical weight {w}, context {s}/{n}"),
                mode: SearchMode::Hybrid,
                ranking,
            });
        }
    }
    let dev_only = flag("--dev-only");
    let halves: &[Split] = if dev_only { &[Split::Dev] } else { &[Split::Dev, Split::Test] };
    println!(
        "## Ranking with {model} on three sets ({} LoCoMo questions with evidence, {} Claude Code cases, {} multilingual)\n",
        loaded.iter().map(|l| l.qa.iter().filter(|q| !locomo::evidence(q).is_empty()).count()).sum::<usize>(),
        cc.len(),
        ml.len()
    );
    println!(
        "| configuration | half | LoCoMo R@10 | LoCoMo hit@5 | top hit from another conversation | Claude Code top 5 | multilingual top 5 | multilingual top 5 sessions |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    let mut default_results = None;
    for c in &configs {
        let t = Instant::now();
        let r = evaluate(&claude, &loc, &loaded, &cc, &ml, c, dev_only)?;
        for &split in halves {
            println!("{}", row(&c.label, split, &r));
        }
        eprintln!("{}: {:.0} s", c.label, t.elapsed().as_secs_f64());
        if flag("--misses") {
            for m in &r.misses {
                eprintln!("  miss: {m}");
            }
        }
        if c.mode == SearchMode::Hybrid && c.ranking == d || flag("--fit") && c.mode != SearchMode::Hybrid {
            default_results.get_or_insert_with(Vec::new).push((c.label.clone(), c.mode, r));
        }
    }
    // LoCoMo per collection (the same questions, each asked of its own conversation only).
    let mut per = BTreeMap::<Split, Tally>::new();
    for (split, l, question, evidence) in locomo_questions(&loaded, dev_only) {
        let hits = l.coll.query(&query(question, SearchMode::Hybrid, d, 10))?;
        let found = evidence
            .iter()
            .filter(|e| {
                hits.iter().any(|h| match &h.doc.body {
                    DocBody::Message(m) => l.dia.get(&(h.doc.session_id.clone(), m.message_index)) == Some(e),
                    _ => false,
                })
            })
            .count();
        per.entry(split).or_default().add(Tally {
            n: 1.0,
            recall10: found as f64 / evidence.len() as f64,
            ..Default::default()
        });
    }
    for (split, t) in &per {
        println!("\nLoCoMo per collection, hybrid default, {split:?}: R@10 {:.3}", t.recall10 / t.n.max(1.0));
    }
    if flag("--fit") {
        for (label, mode, r) in default_results.iter().flatten() {
            let dev: Vec<&Points> =
                ["locomo", "claude", "multilingual"].iter().filter_map(|s| r.points.get(&(Split::Dev, *s))).collect();
            let (a, b) = fit(&dev);
            println!("\n{label} ({mode:?}): relevance fit on the development halves: a = {a:.3}, b = {b:.3}");
            let test: Vec<&Points> =
                ["locomo", "claude", "multilingual"].iter().filter_map(|s| r.points.get(&(Split::Test, *s))).collect();
            reliability(label, &test);
        }
    }
    Ok(())
}
