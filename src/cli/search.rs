//! `convdex search QUERY`: every filter of [`convdex::Filter`] as a flag, one [`convdex::Query`].

use clap::Args;
use convdex::{Answered, DocKind, Filter, Query, Recency, SearchMode};

use super::render::{color, highlight, hit_json, matched, parse_time, role, short, snippet};
use super::{Ctx, print_json, skipped};

/// Search by words and meaning across projects.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// What to look for.
    pub query: String,
    /// Only this project (collection project name); all projects when absent.
    #[arg(long)]
    pub project: Option<String>,
    /// Document type: message, decision or summary.
    #[arg(long = "type")]
    pub kind: Option<DocKind>,
    /// Only documents with this tag (repeatable: any of them).
    #[arg(long)]
    pub tag: Vec<String>,
    /// Only this domain.
    #[arg(long)]
    pub domain: Option<String>,
    /// Only this session (its id or a unique prefix of it, as search prints it).
    #[arg(long)]
    pub session: Option<String>,
    /// Only documents discussing this file (relative to the project root or absolute; `\` or
    /// `/`).
    #[arg(long)]
    pub file: Option<String>,
    /// Only documents discussing a file under this prefix.
    #[arg(long)]
    pub file_prefix: Option<String>,
    /// Only sessions of this agent: claude-code, codex, gemini or aider (repeatable: any of them).
    #[arg(long)]
    pub agent: Vec<convdex::Agent>,
    /// Only at or after this time (RFC 3339 or YYYY-MM-DD).
    #[arg(long)]
    pub since: Option<String>,
    /// Only at or before this time (RFC 3339 or YYYY-MM-DD).
    #[arg(long)]
    pub until: Option<String>,
    /// semantic (meaning), lexical (words: quoted phrases and identifiers must match), or
    /// hybrid (both, fused).
    #[arg(long, default_value = "hybrid")]
    pub mode: SearchMode,
    /// Number of hits, 1 to 1000. The first hits are the same whatever the limit (up to 100).
    #[arg(long, default_value_t = 10)]
    pub limit: usize,
    /// Prefer newer sessions: a hit's score gains up to half again when new, halving every
    /// `--half-life` days. Active decisions count as new; superseded ones sink.
    #[arg(long)]
    pub recent: bool,
    /// Half-life of `--recent`, in days.
    #[arg(long, default_value_t = 30.0, requires = "recent")]
    pub half_life: f32,
    /// Match words in the query's own language only: no translation through the built-in
    /// glossary (by default an English word also matches its Chinese, Japanese and Korean
    /// forms, and the reverse, at 0.75 of a match of the word itself), and no glosses on the
    /// meaning side (by default a Chinese, Japanese or Korean question's vector also carries
    /// its glossary words written in the other languages, and an English question also asks,
    /// in a project written partly in Chinese, Japanese or Korean, with its words written in
    /// those languages, with the default model; `Ranking::gloss`).
    #[arg(long)]
    pub no_translate: bool,
    /// List sessions instead of messages: each session ranked by its best hit among the best
    /// 100 hits (ten per session asked, when more), with its best three; `--limit` counts
    /// sessions. Not with `--team` (a team search lists hits; `convdex pull` makes a mirror
    /// that `--sessions` can ask).
    #[arg(long, conflicts_with = "team")]
    pub sessions: bool,
    /// Ask the team store instead (PostgreSQL with pgvector): `--team postgres://…`
    /// (`--team "$CONVDEX_TEAM_URL"` for the configured one).
    #[arg(long)]
    pub team: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

impl SearchArgs {
    /// The query these flags ask, starting from `ranking` (the index's model's,
    /// [`convdex::Index::default_ranking`]).
    pub fn query(&self, ranking: convdex::Ranking) -> anyhow::Result<Query> {
        let filter = Filter {
            kinds: self.kind.into_iter().collect(),
            tags_any: self.tag.iter().map(|t| t.to_lowercase()).collect(),
            domain: self.domain.as_ref().map(|d| d.to_lowercase()),
            sessions: self.session.iter().cloned().collect(),
            files: self.file.iter().cloned().collect(),
            file_prefix: self.file_prefix.clone(),
            since: self.since.as_deref().map(|s| parse_time(s, false)).transpose()?,
            until: self.until.as_deref().map(|s| parse_time(s, true)).transpose()?,
            agents: self.agent.clone(),
            ..Default::default()
        };
        let mut query = Query::new(self.query.clone());
        query.ranking = ranking;
        query.filter = filter;
        query.mode = Some(self.mode);
        query.limit = self.limit;
        if self.no_translate {
            query.ranking.translation = 0.0;
            query.ranking.gloss = 0.0;
        }
        if self.recent {
            query.ranking.recent = Some(Recency { half_life_days: self.half_life, ..Recency::default() });
        }
        Ok(query)
    }
}

/// Runs `convdex search`.
pub fn run(ctx: &Ctx, a: SearchArgs) -> anyhow::Result<()> {
    if let Some(team) = &a.team {
        return team_search(ctx, &a, team);
    }
    // This process answers one search and exits: it scans every collection's vectors exactly
    // instead of reading graph links it would walk once (measured at 20 projects of 50,000
    // documents: reading the links took seconds a collection, the scan milliseconds).
    let mut options = ctx.options()?;
    options.collection.exact_threshold = usize::MAX;
    let index = convdex::Index::open(&ctx.dir, options)?;
    let asked = a.query(index.default_ranking())?;
    // A query the search refuses is a usage error (with `--sessions` the limit counts sessions).
    asked.validate().map_err(|e| super::Usage(e.to_string()))?;
    let (mut found, mut answered) = super::warm::search(&index, a.project.as_deref(), &asked, a.sessions)?;
    // `--session` with a prefix of an id (as search prints it): nothing matches the prefix
    // itself, so the session it names is asked again by its full id.
    if found.found.is_empty()
        && let Some(prefix) = &a.session
    {
        let full = index.find_session(prefix, a.project.as_deref())?.found.session;
        if full != *prefix {
            let mut again = asked.clone();
            again.filter.sessions = vec![full];
            (found, answered) = super::warm::search(&index, a.project.as_deref(), &again, a.sessions)?;
        }
    }
    // This process loaded the model because no helper runs: start one for the next search.
    if answered == Some(Answered::InProcess(None)) && a.mode != SearchMode::Lexical {
        super::warm::spawn(ctx);
    }
    skipped(&found.skipped);
    let hits = found.found;
    if let Some(note) = super::render::unembedded_note(&hits) {
        eprintln!("note: {note}");
    }
    if a.sessions {
        return print_sessions(convdex::group_sessions(hits, asked.limit), a.json);
    }
    if a.json {
        let v: Vec<_> = hits.iter().map(|h| hit_json(&h.project, &h.hit)).collect();
        return print_json(&v);
    }
    if hits.is_empty() {
        println!("no hits");
    } else {
        let relevances = hits.iter().map(|h| h.hit.relevance);
        if let Some(line) = super::render::among_line(a.mode, index.default_ranking(), relevances) {
            println!("{line}");
        }
        println!("relevance (% chance it answers)  project  session  time  role  [files]");
    }
    let color = color();
    for ph in hits {
        let h = &ph.hit;
        let files: Vec<&str> = h.doc.files_discussed.iter().take(3).map(|f| f.path.as_str()).collect();
        println!(
            "{:>3}  {}  {}  {}  {}{}",
            h.relevance,
            ph.project,
            short(&h.doc.session_id),
            h.doc.timestamp.format("%Y-%m-%d %H:%M"),
            role(&h.doc),
            if files.is_empty() { String::new() } else { format!("  [{}]", files.join(", ")) }
        );
        let text = match &h.snippet {
            Some(s) => highlight(s, color),
            None => snippet(&h.doc.content, 160),
        };
        println!("     ({}) {text}", matched(h));
    }
    Ok(())
}

/// `--sessions`: one block per session, its best hits under it.
fn print_sessions(sessions: Vec<convdex::SessionFound>, json: bool) -> anyhow::Result<()> {
    if json {
        let v: Vec<_> = sessions
            .iter()
            .map(|s| {
                serde_json::json!({"project": s.project, "session": s.session_id, "score": s.score,
                    "relevance": s.relevance, "matched": s.matched,
                    "hits": s.hits.iter().map(|h| hit_json(&s.project, h)).collect::<Vec<_>>()})
            })
            .collect();
        return print_json(&v);
    }
    if sessions.is_empty() {
        println!("no sessions");
        return Ok(());
    }
    println!("relevance (% chance it answers)  project  session  hits  first .. last hit shown");
    let color = color();
    for s in &sessions {
        let first = s.hits.iter().map(|h| h.doc.timestamp).min().unwrap_or_default();
        let last = s.hits.iter().map(|h| h.doc.timestamp).max().unwrap_or_default();
        println!(
            "{:>3}  {}  {}  {}  {} .. {}",
            s.relevance,
            s.project,
            s.session_id,
            s.matched,
            first.format("%Y-%m-%d %H:%M"),
            last.format("%Y-%m-%d %H:%M")
        );
        for h in &s.hits {
            let text = match &h.snippet {
                Some(t) => highlight(t, color),
                None => snippet(&h.doc.content, 120),
            };
            println!("     {:>3} {} ({}) {text}", h.relevance, role(&h.doc), matched(h));
        }
    }
    Ok(())
}

/// `convdex search --team URL`: the same flags asked of the team store.
fn team_search(ctx: &Ctx, a: &SearchArgs, team: &str) -> anyhow::Result<()> {
    let index = ctx.index()?;
    let mut q = convdex::team::TeamQuery::of(&a.query(index.default_ranking())?);
    q.project = a.project.clone();
    let (shown, hits) = super::team::ask(&index, Some(team), &q)?;
    if a.json {
        return print_json(&hits);
    }
    super::team::print_hits(&shown, (q.mode, index.default_ranking()), &hits);
    Ok(())
}
