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
//! the development halves only (to explore without looking at the test halves); `--keep` reuses
//! the indexes of `--data` made by another build of the example; `--small` asks
//! every LoCoMo question and Claude Code case again of a collection holding only the session of
//! its answers (copied with its vectors, `examples/support/small.rs`), prints the questions'
//! background (mean and spread of their cosines, the typical background of
//! `src/search/tuned.rs`), and with `--fit` fits on the large and small development hits pooled
//! and reads the test halves' relevance on each apart; `RANKING_PRIOR=w,…` tries those
//! background prior weights (`Ranking::background_prior`); `RANKING_QUESTION=w,…` and
//! `RANKING_ANSWER=w,…` those question and answer weights (`Ranking::question`,
//! `Ranking::answer`), `RANKING_CLOSING=w,…` those of the turn's closing message
//! (`Ranking::closing`); `RANKING_SWEEP=w:s:n,…` replaces the grid of `--sweep`; `--team URL` pushes the LoCoMo
//! projects to the team store at `URL` (PostgreSQL with pgvector) and asks every question of
//! both stores (evidence recall@10, hit@5, hit@1 side by side). `RANKING_CASES=1` prints each
//! Claude Code case's first hit, whether it is in the answering session and where the answer
//! stands (`RANKING_CASES_TEXT=1`: with the hits' first words). `--among` fits the curve of
//! [`convdex::answer_among`] (the chance an answer is among a question's first 1, 3, 5 and 10
//! hits) on the development halves, with `--small` the one-session histories pooled in, and
//! prints how the chance shown reads on the test halves (without `--fit`, only the default
//! hybrid search is asked).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use convdex::{Context, DocBody, Fusion, Index, IndexOptions, Options, Query, Ranking, SearchMode};
use serde_json::Value;

#[path = "support/locomo.rs"]
mod locomo;
#[path = "support/small.rs"]
mod small;

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

impl Case {
    /// Whether `doc` answers: one of the expected messages, or any document of the expected
    /// session when the case names no message.
    fn answered(&self, doc: &convdex::Document) -> bool {
        match (&doc.body, self.uuids.is_empty()) {
            (_, true) => doc.session_id == self.session,
            (DocBody::Message(m), false) => self.uuids.contains(&m.message_uuid),
            _ => false,
        }
    }
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
    hit1: f64,
    wrong_top: f64,
}

impl Tally {
    fn add(&mut self, o: Tally) {
        self.n += o.n;
        self.recall10 += o.recall10;
        self.hit5 += o.hit5;
        self.hit1 += o.hit1;
        self.wrong_top += o.wrong_top;
    }
}

/// (score, relevance, answered, size) of the top-10 hits, per set, for calibration; `size` is
/// `ln(n / 1000)` of the vectors the hit was chosen from.
type Points = Vec<(f32, u8, bool, f32)>;
/// One question's hits in order: (relevance shown, an answer).
type Asked = Vec<(u8, bool)>;

/// `ln(n / 1000)` of the vectors of every collection of `index` (what a search across all of
/// them chooses from).
fn size_of(index: &Index) -> anyhow::Result<f32> {
    let n: usize = index.each(None, |_, c| Ok(c.stats()?.chunks))?.found.iter().sum();
    Ok((n.max(1) as f32 / 1000.0).ln())
}

struct Results {
    locomo: BTreeMap<Split, Tally>,
    claude: BTreeMap<Split, (usize, usize)>,
    /// The Claude Code cases whose first hit is an answer.
    claude_top1: BTreeMap<Split, (usize, usize)>,
    /// Asked of one session (`--small`): LoCoMo questions and Claude Code cases whose first hit
    /// is an answer.
    small_top1: BTreeMap<Split, (usize, usize)>,
    multilingual: BTreeMap<Split, (usize, usize)>,
    /// The multilingual set asked with `Index::search_sessions`: the expected session among
    /// the first five sessions.
    sessions: BTreeMap<Split, (usize, usize)>,
    points: BTreeMap<(Split, &'static str), Points>,
    /// Each question's hits in order: (relevance shown, an answer), for `--among`.
    questions: BTreeMap<(Split, &'static str), Vec<Asked>>,
    misses: Vec<String>,
}

fn evaluate(
    claude: &Index,
    loc: &Index,
    loaded: &[locomo::Loaded],
    (cc, ml): (&[Case], &[Case]),
    c: &Config,
    dev_only: bool,
    sizes: (f32, f32),
) -> anyhow::Result<Results> {
    let mut r = Results {
        locomo: BTreeMap::new(),
        claude: BTreeMap::new(),
        claude_top1: BTreeMap::new(),
        small_top1: BTreeMap::new(),
        multilingual: BTreeMap::new(),
        sessions: BTreeMap::new(),
        points: BTreeMap::new(),
        questions: BTreeMap::new(),
        misses: Vec::new(),
    };
    for (split, l, question, evidence) in locomo_questions(loaded, dev_only) {
        let q = query(question, c.mode, c.ranking, 10);
        let hits = loc.search(None, &q)?.found;
        let ids: Vec<(String, String, bool)> =
            hits.iter().map(|h| (dia_of(l, &h.hit.doc), h.project.clone(), h.project == l.id)).collect();
        let answered = |x: &(String, String, bool)| x.2 && evidence.contains(&x.0);
        let found = evidence.iter().filter(|e| ids.iter().any(|x| x.2 && &&x.0 == e)).count();
        let t = Tally {
            n: 1.0,
            recall10: found as f64 / evidence.len() as f64,
            hit5: if ids.iter().take(5).any(answered) { 1.0 } else { 0.0 },
            hit1: if ids.first().is_some_and(answered) { 1.0 } else { 0.0 },
            wrong_top: if ids.first().is_some_and(|x| !x.2) { 1.0 } else { 0.0 },
        };
        r.locomo.entry(split).or_default().add(t);
        let pts = r.points.entry((split, "locomo")).or_default();
        pts.extend(hits.iter().zip(&ids).map(|(h, x)| (h.hit.score, h.hit.relevance, answered(x), sizes.0)));
        let asked = hits.iter().zip(&ids).map(|(h, x)| (h.hit.relevance, answered(x))).collect();
        r.questions.entry((split, "locomo")).or_default().push(asked);
    }
    for (set, cases) in [("claude", cc), ("multilingual", ml)] {
        for case in cases.iter().filter(|c| !dev_only || c.split == Split::Dev) {
            // One search serves both measures: the first ten hits of the sessions' pool are the
            // hits at limit 10 (the first hits do not depend on the limit).
            let mut pool = claude.search(None, &convdex::pool_query(&query(&case.query, c.mode, c.ranking, 5)))?.found;
            let sessions = (set == "multilingual").then(|| convdex::group_sessions(pool.clone(), 5));
            pool.truncate(10);
            let hits = pool;
            let answered = |h: &convdex::ProjectHit| case.answered(&h.hit.doc);
            let ok = hits.iter().take(5).any(answered);
            if let Some(sessions) = sessions {
                let e = r.sessions.entry(case.split).or_default();
                e.0 += usize::from(sessions.iter().any(|s| s.session_id == case.session));
                e.1 += 1;
            }
            if set == "claude" && !case.uuids.is_empty() && std::env::var_os("RANKING_CASES").is_some() {
                // A diagnostic: each case's first hit and where its answer stands.
                let at = hits.iter().position(answered);
                let first = hits.first().map(|h| {
                    let s = &h.hit.signals;
                    format!(
                        "score {:.2} z {:.2} share {:.2} closes {:.1}",
                        h.hit.score,
                        s.semantic_z.unwrap_or(0.0),
                        s.lexical_share.unwrap_or(0.0),
                        s.closes
                    )
                });
                let answer = at.map(|i| {
                    let s = &hits[i].hit.signals;
                    format!(
                        "score {:.2} z {:.2} share {:.2} closes {:.1}",
                        hits[i].hit.score,
                        s.semantic_z.unwrap_or(0.0),
                        s.lexical_share.unwrap_or(0.0),
                        s.closes
                    )
                });
                let same = hits.first().is_some_and(|h| h.hit.doc.session_id == case.session);
                eprintln!(
                    "case {} [{}] answer at {at:?}; first in its session {same}; first: {first:?}; answer: {answer:?}",
                    c.label, case.kind
                );
                if std::env::var_os("RANKING_CASES_TEXT").is_some() {
                    eprintln!("  Q: {}", case.query);
                    for h in hits.iter().take(at.map_or(3, |i| i + 1)) {
                        let role = match &h.hit.doc.body {
                            convdex::DocBody::Message(m) => format!("{:?}", m.role),
                            _ => "doc".into(),
                        };
                        let text: String = h.hit.doc.content.chars().take(160).collect::<String>().replace('\n', " ");
                        eprintln!(
                            "   {} {role} {:.2} c{:.1} len {}: {text}",
                            if answered(h) { "*" } else { " " },
                            h.hit.score,
                            h.hit.signals.closes,
                            h.hit.doc.content.len()
                        );
                    }
                }
            }
            if set == "claude" && !case.uuids.is_empty() {
                let e = r.claude_top1.entry(case.split).or_default();
                e.0 += usize::from(hits.first().is_some_and(answered));
                e.1 += 1;
            }
            let tally = if set == "claude" { &mut r.claude } else { &mut r.multilingual };
            let e = tally.entry(case.split).or_default();
            e.0 += usize::from(ok);
            e.1 += 1;
            if !ok {
                r.misses.push(format!("{set} {:?} [{}] {}", case.split, case.kind, case.query));
            }
            let pts = r.points.entry((case.split, set)).or_default();
            pts.extend(hits.iter().map(|h| (h.hit.score, h.hit.relevance, answered(h), sizes.1)));
            r.questions
                .entry((case.split, set))
                .or_default()
                .push(hits.iter().map(|h| (h.hit.relevance, answered(h))).collect());
        }
    }
    Ok(r)
}

/// The small histories (`--small`): each LoCoMo question whose evidence lies in one session,
/// and each Claude Code case with expected messages, asked of a collection of that session
/// only. Points are kept as in [`evaluate`], under the sets `locomo-small` and `claude-small`.
fn evaluate_small(
    small: &small::Small,
    loaded: &[locomo::Loaded],
    cc: &[Case],
    c: &Config,
    dev_only: bool,
    r: &mut Results,
) -> anyhow::Result<()> {
    for (split, l, question, evidence) in locomo_questions(loaded, dev_only) {
        let sessions: HashSet<String> = evidence
            .iter()
            .filter_map(|e| e.trim_start_matches('D').split_once(':').map(|(n, _)| format!("{}-s{n}", l.id)))
            .collect();
        let Some(session) = sessions.iter().next().filter(|_| sessions.len() == 1) else { continue };
        let Some(coll) = small::collection(&small.index, session, &small.locomo)? else { continue };
        let size = (coll.stats()?.chunks.max(1) as f32 / 1000.0).ln();
        let hits = coll.query(&query(question, c.mode, c.ranking, 10))?;
        let answered = |h: &convdex::Hit| evidence.contains(&dia_of(l, &h.doc));
        let e = r.small_top1.entry(split).or_default();
        e.0 += usize::from(hits.first().is_some_and(answered));
        e.1 += 1;
        let pts = r.points.entry((split, "locomo-small")).or_default();
        for h in hits.iter() {
            pts.push((h.score, h.relevance, answered(h), size));
        }
        let asked = hits.iter().map(|h| (h.relevance, answered(h))).collect();
        r.questions.entry((split, "locomo-small")).or_default().push(asked);
    }
    for case in cc.iter().filter(|c| !c.uuids.is_empty() && (!dev_only || c.split == Split::Dev)) {
        let Some(coll) = small::collection(&small.index, &case.session, &small.claude)? else { continue };
        let size = (coll.stats()?.chunks.max(1) as f32 / 1000.0).ln();
        let hits = coll.query(&query(&case.query, c.mode, c.ranking, 10))?;
        let answered = |h: &convdex::Hit| case.answered(&h.doc);
        let e = r.small_top1.entry(case.split).or_default();
        e.0 += usize::from(hits.first().is_some_and(answered));
        e.1 += 1;
        let pts = r.points.entry((case.split, "claude-small")).or_default();
        for h in hits.iter() {
            pts.push((h.score, h.relevance, answered(h), size));
        }
        let asked = hits.iter().map(|h| (h.relevance, answered(h))).collect();
        r.questions.entry((case.split, "claude-small")).or_default().push(asked);
    }
    Ok(())
}

/// The questions' background on the large indexes (development halves): the mean and spread of
/// each question's cosines that its hits' `semantic_z` was read against, from two hits of
/// different cosine, averaged (semantic search with no background prior).
fn background(claude: &Index, loc: &Index, loaded: &[locomo::Loaded], cc: &[Case]) -> anyhow::Result<()> {
    let ranking = Ranking { background_prior: 0.0, gloss: 0.0, ..Ranking::default() };
    let mut seen: Vec<(f64, f64)> = Vec::new();
    let mut read = |hits: Vec<convdex::ProjectHit>| {
        let pts: Vec<(f64, f64)> = hits
            .iter()
            .filter_map(|h| Some((f64::from(h.hit.signals.semantic?), f64::from(h.hit.signals.semantic_z?))))
            .collect();
        if let (Some(a), Some(b)) = (pts.first(), pts.last())
            && (a.1 - b.1).abs() > 0.5
        {
            let sd = (a.0 - b.0) / (a.1 - b.1);
            seen.push((a.0 - a.1 * sd, sd));
        }
    };
    for (_, _, question, _) in locomo_questions(loaded, true) {
        read(loc.search(None, &query(question, SearchMode::Semantic, ranking, 10))?.found);
    }
    for case in cc.iter().filter(|c| c.split == Split::Dev) {
        read(claude.search(None, &query(&case.query, SearchMode::Semantic, ranking, 10))?.found);
    }
    let n = seen.len().max(1) as f64;
    let mean = seen.iter().map(|x| x.0).sum::<f64>() / n;
    let sd = seen.iter().map(|x| x.1).sum::<f64>() / n;
    let spread = (seen.iter().map(|x| (x.0 - mean).powi(2)).sum::<f64>() / n).sqrt();
    println!(
        "\nBackground of the development questions ({} questions, semantic, no prior): mean {mean:.4} (± {spread:.4} between questions), spread {sd:.4}",
        seen.len()
    );
    Ok(())
}

fn row(label: &str, split: Split, r: &Results) -> String {
    let l = r.locomo.get(&split).copied().unwrap_or_default();
    let n = l.n.max(1.0);
    let rate = |m: &BTreeMap<Split, (usize, usize)>| {
        let (a, b) = m.get(&split).copied().unwrap_or_default();
        format!("{a}/{b} ({:.2})", a as f64 / b.max(1) as f64)
    };
    format!(
        "| {label} | {split:?} | {:.3} | {:.3} | {:.3} | {:.3} | {} | {} | {} | {} | {} |",
        l.recall10 / n,
        l.hit5 / n,
        l.hit1 / n,
        l.wrong_top / n,
        rate(&r.claude),
        rate(&r.claude_top1),
        rate(&r.multilingual),
        rate(&r.sessions),
        rate(&r.small_top1)
    )
}

/// The team store at `url` (a PostgreSQL with pgvector), made ready and holding every
/// collection of `index` (a push sends only what it lacks).
fn pushed_to_team(index: &Index, url: &str) -> anyhow::Result<convdex::team::TeamStore> {
    let store = convdex::team::TeamStore::connect(url)?;
    store.init()?;
    let t = Instant::now();
    let pushed = store.push(index, None)?;
    eprintln!(
        "team: {} documents sent, {} unchanged in {:.0} s",
        pushed.sent,
        pushed.unchanged,
        t.elapsed().as_secs_f64()
    );
    Ok(store)
}

/// A local query asked of the team store within one tenant: the projects the local index
/// searched (the store may hold the other set's projects too).
fn scoped(q: &convdex::Query, tenant: &str) -> convdex::team::TeamQuery {
    convdex::team::TeamQuery { tenant: Some(tenant.to_string()), ..convdex::team::TeamQuery::of(q) }
}

/// `--team URL`: the LoCoMo projects pushed to the team store at `URL` (a PostgreSQL with
/// pgvector) and every question asked of both stores across all projects, each store's default
/// hybrid search: evidence recall@10 and hit@5 per half, side by side.
fn team_quality(loc: &Index, loaded: &[locomo::Loaded], url: &str, dev_only: bool) -> anyhow::Result<()> {
    let store = pushed_to_team(loc, url)?;
    let embedder = loc.embedder()?;
    let mut tallies: BTreeMap<(&str, Split), Tally> = BTreeMap::new();
    for (split, l, question, evidence) in locomo_questions(loaded, dev_only) {
        let q = query(question, SearchMode::Hybrid, loc.default_ranking(), 10);
        let local: Vec<(String, String)> =
            loc.search(None, &q)?.found.iter().map(|h| (h.project.clone(), dia_of(l, &h.hit.doc))).collect();
        let team: Vec<(String, String)> = store
            .search(&scoped(&q, "locomo"), Some(embedder.as_ref()), &loc.options().collection.glossary)?
            .iter()
            .map(|h| (h.project.clone(), dia_of(l, &h.doc)))
            .collect();
        for (name, ids) in [("embedded", local), ("team", team)] {
            let answered = |x: &(String, String)| x.0 == l.id && evidence.contains(&x.1);
            let found = evidence.iter().filter(|e| ids.iter().any(|x| x.0 == l.id && &&x.1 == e)).count();
            tallies.entry((name, split)).or_default().add(Tally {
                n: 1.0,
                recall10: found as f64 / evidence.len() as f64,
                hit5: if ids.iter().take(5).any(answered) { 1.0 } else { 0.0 },
                hit1: if ids.first().is_some_and(answered) { 1.0 } else { 0.0 },
                wrong_top: 0.0,
            });
        }
    }
    println!("\n| LoCoMo as ten projects, default hybrid | half | R@10 | hit@5 | hit@1 |\n|---|---|---:|---:|---:|");
    for ((name, split), t) in &tallies {
        let n = t.n.max(1.0);
        println!("| {name} store | {split:?} | {:.3} | {:.3} | {:.3} |", t.recall10 / n, t.hit5 / n, t.hit1 / n);
    }
    Ok(())
}

/// `--team URL`, the other sets: the transcripts pushed to the team store and the Claude Code
/// cases and multilingual questions asked of both stores (the expected message, or session, in
/// the first five), each store's default hybrid search (the team store glosses and translates
/// as the local one does).
fn team_cases(claude: &Index, (cc, ml): (&[Case], &[Case]), url: &str, dev_only: bool) -> anyhow::Result<()> {
    let store = pushed_to_team(claude, url)?;
    let embedder = claude.embedder()?;
    let mut tallies: BTreeMap<(&str, &str, Split), (usize, usize)> = BTreeMap::new();
    for (set, cases) in [("Claude Code top 5", cc), ("multilingual top 5", ml)] {
        for case in cases.iter().filter(|c| !dev_only || c.split == Split::Dev) {
            let q = query(&case.query, SearchMode::Hybrid, claude.default_ranking(), 5);
            let local = claude.search(None, &q)?.found.iter().any(|h| case.answered(&h.hit.doc));
            let team = store
                .search(&scoped(&q, "eval"), Some(embedder.as_ref()), &claude.options().collection.glossary)?
                .iter()
                .any(|h| case.answered(&h.doc));
            // `RANKING_TEAM_MISSES=1`: each case the two stores answer differently, and what
            // each finds by words alone.
            if local != team && std::env::var_os("RANKING_TEAM_MISSES").is_some() {
                let w = query(&case.query, SearchMode::Lexical, claude.default_ranking(), 5);
                let lw: Vec<String> = claude
                    .search(None, &w)?
                    .found
                    .iter()
                    .map(|h| h.hit.doc.id.simple().to_string().chars().take(8).collect::<String>())
                    .collect();
                let tw: Vec<String> = store
                    .search(&scoped(&w, "eval"), None, &claude.options().collection.glossary)?
                    .iter()
                    .map(|h| h.doc.id.simple().to_string().chars().take(8).collect::<String>())
                    .collect();
                eprintln!(
                    "differs ({set}, {:?}): local {local}, team {team}: {:?}\n  words local {lw:?}\n  words team  {tw:?}\n  parsed {:?}",
                    case.split,
                    case.query,
                    convdex::lexical::LexicalQuery::parse(&case.query)
                );
            }
            for (name, ok) in [("embedded", local), ("team", team)] {
                let e = tallies.entry((set, name, case.split)).or_default();
                e.0 += usize::from(ok);
                e.1 += 1;
            }
        }
    }
    println!("\n| the transcripts, default hybrid | store | half | found |\n|---|---|---|---:|");
    for ((set, name, split), (a, b)) in &tallies {
        println!("| {set} | {name} | {split:?} | {a}/{b} |");
    }
    Ok(())
}

/// The LoCoMo turn (`D1:3`) a document of conversation `l` is, or "".
fn dia_of(l: &locomo::Loaded, doc: &convdex::Document) -> String {
    match &doc.body {
        DocBody::Message(m) => l.dia.get(&(doc.session_id.clone(), m.message_index)).cloned().unwrap_or_default(),
        _ => String::new(),
    }
}

/// Fits `p = 1 / (1 + e^−(a·s + b + c·size))` by maximum likelihood (Newton's method on the
/// standardised score, halving steps that do not improve) over the pooled hits of the sets,
/// each hit weighing the same, `size` being `ln(n / 1000)` of the vectors the hit was chosen
/// from: the relevance then reads as the share of answers among hits shown with it, whatever
/// set and whatever size of history they came from. (Each set weighing the same let the few
/// Claude Code and multilingual hits, most of them answers, pull the curve up against LoCoMo's
/// many.) Without `with_size`, `c` stays 0.
fn fit(sets: &[&Points], with_size: bool) -> (f64, f64, f64) {
    let all: Vec<(f64, f64, f64)> = sets
        .iter()
        .flat_map(|pts| pts.iter().map(|&(s, _, y, n)| (f64::from(s), f64::from(n), if y { 1.0 } else { 0.0 })))
        .collect();
    let total = all.len().max(1) as f64;
    let mean = all.iter().map(|x| x.0).sum::<f64>() / total;
    let sd = (all.iter().map(|x| (x.0 - mean).powi(2)).sum::<f64>() / total).sqrt().max(1e-9);
    let features = |s: f64, n: f64| [(s - mean) / sd, if with_size { n } else { 0.0 }, 1.0];
    let loss = |w: &[f64; 3]| -> f64 {
        all.iter()
            .map(|&(s, n, y)| {
                let x = features(s, n);
                let t = w[0] * x[0] + w[1] * x[1] + w[2];
                (1.0 + t.exp()).ln() - y * t
            })
            .sum::<f64>()
            + 1e-6 * (w[0] * w[0] + w[1] * w[1])
    };
    let mut w = [0.0f64; 3];
    for _ in 0..100 {
        let mut g = [2e-6 * w[0], 2e-6 * w[1], 0.0];
        let mut h = [[2e-6, 0.0, 0.0], [0.0, 2e-6, 0.0], [0.0, 0.0, 1e-9]];
        for &(s, n, y) in &all {
            let x = features(s, n);
            let p = 1.0 / (1.0 + (-(w[0] * x[0] + w[1] * x[1] + w[2])).exp());
            for i in 0..3 {
                g[i] += (p - y) * x[i];
                for j in 0..3 {
                    h[i][j] += p * (1.0 - p) * x[i] * x[j];
                }
            }
        }
        let d = solve3(h, g);
        let before = loss(&w);
        let mut step = 1.0;
        let at = |step: f64| [w[0] - step * d[0], w[1] - step * d[1], w[2] - step * d[2]];
        while step > 1e-6 && loss(&at(step)) > before {
            step /= 2.0;
        }
        w = at(step);
        if step * (d[0].abs() + d[1].abs() + d[2].abs()) < 1e-9 {
            break;
        }
    }
    // Back to raw scores: a·(s − mean)/sd + c·size + b.
    (w[0] / sd, w[2] - w[0] * mean / sd, w[1])
}

/// `h · d = g` for a symmetric positive 3 × 3 `h` (Cramer's rule).
fn solve3(h: [[f64; 3]; 3], g: [f64; 3]) -> [f64; 3] {
    let det = |m: [[f64; 3]; 3]| {
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    };
    let d = det(h);
    let mut out = [0.0; 3];
    for (k, o) in out.iter_mut().enumerate() {
        let mut m = h;
        for i in 0..3 {
            m[i][k] = g[i];
        }
        *o = det(m) / d;
    }
    out
}

/// What a curve `(a, b, c)` of [`fit`] reads for a point, 0–100.
fn read_curve((a, b, c): (f64, f64, f64), x: &(f32, u8, bool, f32)) -> f64 {
    100.0 / (1.0 + (-(a * f64::from(x.0) + b + c * f64::from(x.3))).exp())
}

fn reliability(label: &str, half: &str, pts: &[&Points], curve: Option<(f64, f64, f64)>) {
    let read = |x: &(f32, u8, bool, f32)| curve.map_or(f64::from(x.1), |k| read_curve(k, x));
    let which = if curve.is_some() { "the curve just fitted" } else { "relevance shown" };
    println!("\n{label}: {which} vs answers among those hits ({half} halves)\n");
    if pts.is_empty() {
        return;
    }
    println!("| relevance | hits | mean relevance | answers |");
    println!("|---|---:|---:|---:|");
    for (lo, hi) in [(0.0, 10.0), (10.0, 30.0), (30.0, 50.0), (50.0, 70.0), (70.0, 90.0), (90.0, 100.1)] {
        // (relevance read, answered) of the points read within the band.
        let inside: Vec<(f64, bool)> = pts
            .iter()
            .flat_map(|p| p.iter())
            .map(|x| (read(x), x.2))
            .filter(|(r, _)| (lo..hi).contains(&r.round()))
            .collect();
        if inside.is_empty() {
            continue;
        }
        let n = inside.len() as f64;
        let mean = inside.iter().map(|x| x.0).sum::<f64>() / n;
        let yes = inside.iter().filter(|x| x.1).count() as f64 / n;
        println!("| {lo}–{} | {} | {mean:.0} | {:.0}% |", hi.min(100.0), inside.len(), yes * 100.0);
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
    // `--keep` reuses them whatever build made them (for a change that indexes nothing
    // differently: a ranking or a relevance curve).
    if data.exists() && !flag("--keep") && std::fs::read_to_string(&stamp_file).ok().as_deref() != Some(stamp.as_str())
    {
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
    let loc = Index::open(data.join("locomo"), options.clone())?;
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
    // `RANKING_QUESTION=w,...`: the default hybrid search with those question weights.
    if let Ok(v) = std::env::var("RANKING_QUESTION") {
        for w in v.split(',').filter_map(|x| x.parse::<f32>().ok()) {
            let ranking = Ranking { question: w, ..d };
            configs.push(Config { label: format!("question {w}, hybrid"), mode: SearchMode::Hybrid, ranking });
        }
    }
    // `RANKING_ANSWER=w,...`: the default hybrid search with those answer weights.
    if let Ok(v) = std::env::var("RANKING_ANSWER") {
        for w in v.split(',').filter_map(|x| x.parse::<f32>().ok()) {
            let ranking = Ranking { answer: w, ..d };
            configs.push(Config { label: format!("answer {w}, hybrid"), mode: SearchMode::Hybrid, ranking });
        }
    }
    // `RANKING_CLOSING=w,...`: the default hybrid search with those closing weights.
    if let Ok(v) = std::env::var("RANKING_CLOSING") {
        for w in v.split(',').filter_map(|x| x.parse::<f32>().ok()) {
            let ranking = Ranking { closing: w, ..d };
            configs.push(Config { label: format!("closing {w}, hybrid"), mode: SearchMode::Hybrid, ranking });
        }
    }
    // `RANKING_PRIOR=w,...`: the default hybrid and semantic search with those background priors.
    if let Ok(v) = std::env::var("RANKING_PRIOR") {
        for w in v.split(',').filter_map(|x| x.parse::<f32>().ok()) {
            for mode in [SearchMode::Hybrid, SearchMode::Semantic] {
                let ranking = Ranking { background_prior: w, ..d };
                configs.push(Config { label: format!("prior {w}, {mode:?}").to_lowercase(), mode, ranking });
            }
        }
    }
    // `--among` without `--fit` asks the default hybrid search only (what it reads).
    if flag("--among") && !flag("--fit") {
        configs.retain(|c| c.mode == SearchMode::Hybrid && c.ranking == d);
    }
    let small_run = flag("--small");
    // How many vectors the large searches choose from (LoCoMo's ten projects; the transcripts).
    let sizes = (size_of(&loc)?, size_of(&claude)?);
    let mut small = small::Small {
        index: Index::open(data.join("small"), options)?,
        locomo: Default::default(),
        claude: Default::default(),
    };
    if small_run {
        background(&claude, &loc, &loaded, &cc)?;
        small.locomo = small::by_session(&loc)?;
        small.claude = small::by_session(&claude)?;
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
        "| configuration | half | LoCoMo R@10 | LoCoMo hit@5 | LoCoMo hit@1 | top hit from another conversation | Claude Code top 5 | Claude Code top 1 | multilingual top 5 | multilingual top 5 sessions | one session: first hit answers (`--small`) |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut default_results = None;
    for c in &configs {
        let t = Instant::now();
        let mut r = evaluate(&claude, &loc, &loaded, (&cc, &ml), c, dev_only, sizes)?;
        if small_run {
            evaluate_small(&small, &loaded, &cc, c, dev_only, &mut r)?;
        }
        for &split in halves {
            println!("{}", row(&c.label, split, &r));
        }
        eprintln!("{}: {:.0} s", c.label, t.elapsed().as_secs_f64());
        if flag("--misses") {
            for m in &r.misses {
                eprintln!("  miss: {m}");
            }
        }
        if c.mode == SearchMode::Hybrid && c.ranking == d
            || flag("--fit")
                && (c.mode != SearchMode::Hybrid || c.label.starts_with("prior") || c.label.starts_with("question"))
        {
            default_results.get_or_insert_with(Vec::new).push((c.label.clone(), c.mode, r));
        }
    }
    // LoCoMo per collection (the same questions, each asked of its own conversation only).
    let mut per = BTreeMap::<Split, Tally>::new();
    for (split, l, question, evidence) in locomo_questions(&loaded, dev_only) {
        let hits = l.coll.query(&query(question, SearchMode::Hybrid, d, 10))?;
        let found = evidence.iter().filter(|e| hits.iter().any(|h| dia_of(l, &h.doc) == **e)).count();
        per.entry(split).or_default().add(Tally {
            n: 1.0,
            recall10: found as f64 / evidence.len() as f64,
            ..Default::default()
        });
    }
    for (split, t) in &per {
        println!("\nLoCoMo per collection, hybrid default, {split:?}: R@10 {:.3}", t.recall10 / t.n.max(1.0));
    }
    if let Some(url) = value("--team") {
        team_cases(&claude, (&cc, &ml), url, dev_only)?;
        team_quality(&loc, &loaded, url, dev_only)?;
    }
    if flag("--fit") {
        for (label, mode, r) in default_results.iter().flatten() {
            let sets: &[&str] = &["locomo", "claude", "multilingual", "locomo-small", "claude-small"];
            let dev: Vec<&Points> = sets.iter().filter_map(|s| r.points.get(&(Split::Dev, *s))).collect();
            let (a, b, c) = fit(&dev, small_run);
            println!(
                "\n{label} ({mode:?}): relevance fit on the development halves: a = {a:.3}, b = {b:.3}, c = {c:.3}"
            );
            let test: Vec<&Points> = sets[..3].iter().filter_map(|s| r.points.get(&(Split::Test, *s))).collect();
            reliability(label, "test", &test, None);
            if small_run {
                let small: Vec<&Points> = sets[3..].iter().filter_map(|s| r.points.get(&(Split::Test, *s))).collect();
                reliability(&format!("{label}, small histories (one session)"), "test", &small, None);
                reliability(&format!("{label}, large histories"), "test", &test, Some((a, b, c)));
                reliability(&format!("{label}, small histories (one session)"), "test", &small, Some((a, b, c)));
                // The curve just fitted, read on the development halves: how far the share of
                // answers stands from the relevance it would show, large and small apart.
                for (what, part) in [("large", &sets[..3]), ("small", &sets[3..])] {
                    let pts: Vec<&(f32, u8, bool, f32)> =
                        part.iter().filter_map(|s| r.points.get(&(Split::Dev, *s))).flat_map(|p| p.iter()).collect();
                    let n = pts.len().max(1) as f64;
                    let shown: f64 = pts.iter().map(|x| read_curve((a, b, c), x) / 100.0).sum::<f64>() / n;
                    let yes = pts.iter().filter(|x| x.2).count() as f64 / n;
                    println!(
                        "development, {what}: {} hits, refitted curve reads {:.1} %, answers {:.1} %",
                        pts.len(),
                        shown * 100.0,
                        yes * 100.0
                    );
                }
            }
        }
    }
    if flag("--among") {
        // The default hybrid search only (with `--fit`, other hybrid rankings are kept too).
        let default =
            |x: &&(String, SearchMode, Results)| x.1 == SearchMode::Hybrid && x.0.starts_with("hybrid (default");
        among(default_results.iter().flatten().filter(default).map(|x| &x.2));
    }
    Ok(())
}

/// How many of a question's first hits `--among` reads [`convdex::answer_among`] of.
const AMONG_FIRST: [usize; 4] = [1, 3, 5, 10];

/// A question's first `k` hits as a point of [`fit`] and [`reliability`]: the logit of the
/// chance an answer is among them were the hits independent, [`convdex::answer_among`] of
/// them, whether one was an answer, and `ln k` (where [`fit`] reads a size).
fn among_point(hits: &[(u8, bool)], k: usize) -> (f32, u8, bool, f32) {
    let first = &hits[..k.min(hits.len())];
    let none: f64 = first.iter().map(|h| 1.0 - (f64::from(h.0) / 100.0).clamp(0.005, 0.995)).product();
    let q = (1.0 - none).clamp(1e-4, 1.0 - 1e-4);
    let shown = convdex::answer_among(first.iter().map(|h| h.0));
    ((q / (1.0 - q)).ln() as f32, shown, first.iter().any(|h| h.1), (first.len() as f32).ln())
}

/// `--among`: the chance an answer is among the first 1, 3, 5 and 10 hits of the default
/// hybrid search, per question: the curve of [`convdex::answer_among`],
/// `σ(α · logit(q) + β + γ · ln k)`, fitted on the development halves (large and one-session
/// histories pooled, each question and each `k` one point: a question with fewer than `k` hits
/// counts its hits again, one of 1,914 development questions) and how the chance shown reads
/// against each half, large and small apart.
fn among<'a>(results: impl Iterator<Item = &'a Results>) {
    for r in results {
        let points = |split: Split, sets: &[&str]| -> Points {
            sets.iter()
                .filter_map(|s| r.questions.get(&(split, *s)))
                .flatten()
                .filter(|hits| !hits.is_empty())
                .flat_map(|hits| AMONG_FIRST.map(|k| among_point(hits, k)))
                .collect()
        };
        let (large, small) = (&["locomo", "claude", "multilingual"][..], &["locomo-small", "claude-small"][..]);
        let dev = [points(Split::Dev, large), points(Split::Dev, small)];
        let (a, b, c) = fit(&[&dev[0], &dev[1]], true);
        println!(
            "\nan answer among the first {AMONG_FIRST:?} hits: fitted on {} development points: α = {a:.3}, β = {b:.3}, γ = {c:.3}",
            dev[0].len() + dev[1].len()
        );
        for (what, sets) in [("large histories", large), ("small histories (one session)", small)] {
            for (split, half) in [(Split::Dev, "development"), (Split::Test, "test")] {
                let pts = points(split, sets);
                if pts.is_empty() {
                    continue;
                }
                let label = format!("an answer among the first {AMONG_FIRST:?} hits, {what}: questions × k");
                reliability(&label, half, &[&pts], None);
                reliability(&label, half, &[&pts], Some((a, b, c)));
            }
        }
    }
}
