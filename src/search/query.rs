//! What a search asks: its text, its [`Filter`], its mode and how many hits. One type for
//! every front end: the library's builder, the CLI and the MCP server all fill a [`Query`].
//!
//! A filter is data: [`Filter::clauses`] says which secondary index to read with which keys
//! (the store evaluates clauses without knowing the filters), so adding a filter over an
//! existing index is a field, a builder method and a clause, here.

use chrono::{DateTime, Utc};

use crate::doc::DocKind;
use crate::error::{Error, Result};
pub use crate::search::mode::SearchMode;
use crate::search::ranking::{Fusion, Ranking};

/// The most hits one search returns ([`Query::limit`]); more is [`Error::LimitTooLarge`].
pub const MAX_LIMIT: usize = 1000;
/// The longest query text, in bytes; longer is [`Error::QueryTooLong`]. The model reads at most
/// 256 tokens of it anyway.
pub const MAX_QUERY_BYTES: usize = 8 * 1024;

/// Which documents a search may return. Every field combines with the others by AND; a list
/// field matches any of its values. Default: no restriction.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Filter {
    /// Document types.
    pub kinds: Vec<DocKind>,
    /// Documents carrying at least one of these tags (lower-case).
    pub tags_any: Vec<String>,
    /// Documents carrying all of these tags (lower-case).
    pub tags_all: Vec<String>,
    /// Documents of this domain (lower-case).
    pub domain: Option<String>,
    /// Documents of one of these sessions.
    pub sessions: Vec<String>,
    /// Documents that discuss one of these files, in whatever form the path is typed
    /// ([`crate::text::paths::lookup_forms`]).
    pub files: Vec<String>,
    /// Documents that discuss a file under this path prefix (e.g. a directory `src/`).
    pub file_prefix: Option<String>,
    /// Documents at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Documents at or before this time.
    pub until: Option<DateTime<Utc>>,
    /// Documents written by one of these agents (`claude-code`, `codex`, `gemini`, `aider`).
    pub agents: Vec<crate::ingest::layout::Agent>,
}

/// A secondary index of the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IndexName {
    Kind,
    Tag,
    Domain,
    Session,
    File,
}

/// One condition on documents, as the store evaluates it: the documents listed under any of
/// `keys` (or any key starting with `prefix`, or in the time range) of one secondary index.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Clause {
    /// Any of these keys.
    Any(IndexName, Vec<String>),
    /// Any key starting with one of these prefixes.
    Prefix(IndexName, Vec<String>),
    /// Timestamps (ms) in `lo..=hi`.
    TimeRange(i64, i64),
}

impl Filter {
    /// True when nothing is restricted.
    pub fn is_empty(&self) -> bool {
        self.clauses(None).is_empty()
    }

    /// Whether the filter says where the answer lies: a file, a directory or a session. The
    /// relevance of such a search reads how much it narrowed the candidates (measured on file-
    /// and session-filtered questions; docs/ranking.md, «Relevance under a filter»); the other
    /// filters (type, tag, domain, agent, time) leave it as an unfiltered search's.
    pub(crate) fn locates(&self) -> bool {
        !self.files.is_empty() || self.file_prefix.is_some() || !self.sessions.is_empty()
    }

    /// The part of the filter that says where the answer lies ([`Filter::locates`]): its files,
    /// directory and sessions, nothing else. A search reads how much this part narrowed the
    /// candidates, whatever else the filter holds.
    pub(crate) fn locating(&self) -> Filter {
        Filter {
            sessions: self.sessions.clone(),
            files: self.files.clone(),
            file_prefix: self.file_prefix.clone(),
            ..Filter::default()
        }
    }

    /// Checks the filter; the error says what to fix.
    pub fn validate(&self) -> Result<()> {
        if let (Some(s), Some(u)) = (self.since, self.until)
            && s > u
        {
            return Err(Error::InvertedTimeRange { since: s.to_rfc3339(), until: u.to_rfc3339() });
        }
        if self.files.iter().any(|f| f.trim().is_empty()) {
            return Err(Error::InvalidArgument("file filter is empty; give a path such as `src/auth.rs`".into()));
        }
        Ok(())
    }

    /// The filter as clauses over the store's secondary indexes (AND of clauses). `root` is the
    /// collection's project path, for file paths typed absolute.
    pub(crate) fn clauses(&self, root: Option<&str>) -> Vec<Clause> {
        let mut out = Vec::new();
        if !self.kinds.is_empty() {
            out.push(Clause::Any(IndexName::Kind, self.kinds.iter().map(|k| k.code().to_string()).collect()));
        }
        if !self.tags_any.is_empty() {
            out.push(Clause::Any(IndexName::Tag, self.tags_any.clone()));
        }
        for t in &self.tags_all {
            out.push(Clause::Any(IndexName::Tag, vec![t.clone()]));
        }
        if let Some(d) = &self.domain {
            out.push(Clause::Any(IndexName::Domain, vec![d.clone()]));
        }
        if !self.sessions.is_empty() {
            out.push(Clause::Any(IndexName::Session, self.sessions.clone()));
        }
        if !self.files.is_empty() {
            let forms = self.files.iter().flat_map(|f| crate::text::paths::lookup_forms(f, root)).collect();
            out.push(Clause::Any(IndexName::File, forms));
        }
        if let Some(p) = &self.file_prefix {
            // A directory prefix keeps its `/` (`src/` must not match `srcx/`).
            let dir = p.ends_with('/') || p.ends_with('\\');
            let forms = crate::text::paths::lookup_forms(p, root)
                .into_iter()
                .map(|f| if dir && !f.is_empty() && !f.ends_with('/') { format!("{f}/") } else { f })
                .collect();
            out.push(Clause::Prefix(IndexName::File, forms));
        }
        if !self.agents.is_empty() {
            out.push(Clause::Any(IndexName::Tag, self.agents.iter().map(|a| format!("source:{a}")).collect()));
        }
        if self.since.is_some() || self.until.is_some() {
            let lo = self.since.map_or(i64::MIN, |d| d.timestamp_millis());
            let hi = self.until.map_or(i64::MAX, |d| d.timestamp_millis());
            out.push(Clause::TimeRange(lo, hi));
        }
        out
    }
}

/// A search: text, filter, mode and limit. Front ends parse their input into one.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Query {
    /// What to look for (at most [`MAX_QUERY_BYTES`]).
    pub text: String,
    /// Which documents may be returned.
    pub filter: Filter,
    /// How the text is matched. Default: `None`, hybrid (semantic when the collection has no
    /// lexical index).
    pub mode: Option<SearchMode>,
    /// Hits at most, 1 to [`MAX_LIMIT`]. Default: 10. The first `k` hits do not depend on the
    /// limit (up to [`crate::POOL_DEPTH`]).
    pub limit: usize,
    /// How hits are ordered. Default: [`Ranking::default`], chosen for the default model;
    /// [`crate::Index::default_ranking`] is the one chosen for an index's model.
    pub ranking: Ranking,
}

impl Query {
    /// A query for `text` with no filter, the default mode and 10 hits.
    pub fn new(text: impl Into<String>) -> Query {
        Query { text: text.into(), filter: Filter::default(), mode: None, limit: 10, ranking: Ranking::default() }
    }

    /// Checks the query; the error says what to fix.
    pub fn validate(&self) -> Result<()> {
        if self.text.trim().is_empty() {
            return Err(Error::EmptyQuery);
        }
        if self.text.len() > MAX_QUERY_BYTES {
            return Err(Error::QueryTooLong { bytes: self.text.len(), max: MAX_QUERY_BYTES });
        }
        if self.mode != Some(SearchMode::Semantic) {
            let terms = crate::lexical::tokenize::LexicalQuery::parse(&self.text).clauses();
            if terms > crate::lexical::tokenize::MAX_CLAUSES {
                return Err(Error::TooManyTerms { terms, max: crate::lexical::tokenize::MAX_CLAUSES });
            }
        }
        validate_limit(self.limit)?;
        validate_ranking(&self.ranking)?;
        self.filter.validate()
    }
}

/// Checks a [`Ranking`]'s parameters; the error says what to fix.
pub(crate) fn validate_ranking(r: &Ranking) -> Result<()> {
    let bad = |what: &str, v: f32, range: &str| {
        Err(Error::InvalidArgument(format!("{what} must be a number {range}, got {v}")))
    };
    match r.fusion {
        Fusion::Rrf { k } if !(k > 0.0 && k.is_finite()) => return bad("RRF k", k, "above 0"),
        Fusion::Blend { semantic_weight: w } if !(0.0..=1.0).contains(&w) => {
            return bad("the blend weight", w, "within 0..=1");
        }
        Fusion::Calibrated { lexical_weight: w } if !(0.0..=100.0).contains(&w) => {
            return bad("the lexical weight", w, "within 0..=100");
        }
        _ => {}
    }
    for (what, v) in
        [("the session context weight", r.context.session), ("the neighbour context weight", r.context.neighbours)]
    {
        if !(0.0..=10.0).contains(&v) {
            return bad(what, v, "within 0..=10");
        }
    }
    if !(0.0..=10.0).contains(&r.translation) {
        return bad("the translation weight", r.translation, "within 0..=10");
    }
    if !(0.0..=10.0).contains(&r.gloss) {
        return bad("the gloss weight", r.gloss, "within 0..=10");
    }
    if !(0.0..=100.0).contains(&r.question) {
        return bad("the question weight", r.question, "within 0..=100");
    }
    if !(0.0..=100.0).contains(&r.answer) {
        return bad("the answer weight", r.answer, "within 0..=100");
    }
    if !(0.0..=100.0).contains(&r.closing) {
        return bad("the closing weight", r.closing, "within 0..=100");
    }
    if !(0.0..=1e9).contains(&r.background_prior) {
        return bad("the background prior (vectors)", r.background_prior, "within 0..=1e9");
    }
    if let Some(rec) = r.recent {
        if !(rec.half_life_days > 0.0 && rec.half_life_days.is_finite()) {
            return bad("the recency half-life (days)", rec.half_life_days, "above 0");
        }
        if !(0.0..=10.0).contains(&rec.weight) {
            return bad("the recency weight", rec.weight, "within 0..=10");
        }
    }
    Ok(())
}

/// A limit of 1 to [`MAX_LIMIT`].
pub(crate) fn validate_limit(limit: usize) -> Result<()> {
    match limit {
        0 => Err(Error::ZeroLimit),
        n if n > MAX_LIMIT => Err(Error::LimitTooLarge { limit: n, max: MAX_LIMIT }),
        _ => Ok(()),
    }
}

/// Whether a question asks about a past decision ("why did we pick …", "which … did we settle
/// on", "what did we decide", "why do we keep …", "where do we keep … and why", and the like in
/// Chinese, Japanese and Korean): its answer is a decision, or the message it was made in
/// ([`crate::Ranking::decision_lift`]). Not a question about something that keeps happening
/// ("why do we keep getting 401s?") or a failure ("why are we running out of memory?").
pub fn asks_about_a_decision(text: &str) -> bool {
    static R: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    static NOT: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let not = NOT.get_or_init(|| {
        regex::Regex::new(
            r"(?i)\bwhy (?:do|are) we (?:still |even )?(?:keep|keeping) \w+ing\b|\b(?:run|running) (?:into|out)\b",
        )
        .expect("valid")
    });
    !not.is_match(text)
        && R.get_or_init(|| {
        regex::Regex::new(
            r"(?i)\b(?:why did (?:we|i|you)|why (?:do|are) we (?:still |even )?(?:use|using|keep|keeping|store|storing|run|running)|(?:where|what|which|how) do we (?:keep|store|use|run|host|put|cache|persist|deploy)\b.{0,60}? and why|which .{1,40}? did (?:we|i|you) (?:settle on|pick|choose|go with|decide on|end up with|use)|what did (?:we|i|you) (?:decide|choose|pick|settle on|go with)|did we (?:decide|choose|settle)|what was (?:the decision|decided)|how did we decide)\b|为什么(?:选|用|采用|决定)|(?:选|定|决定)了(?:哪|什么)|最后(?:用|选)了|决定.{0,20}(?:什么|哪)|なぜ.{0,10}(?:選|使|採用)|どれに(?:した|決め)|何に決め|왜.{0,10}(?:선택|사용|썼)|뭘로 (?:정했|결정)|어떤.{0,10}(?:선택|결정)했",
        )
        .expect("valid")
    })
    .is_match(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_become_clauses_over_the_indexes() {
        assert!(Filter::default().is_empty());
        let f = Filter {
            kinds: vec![DocKind::Decision],
            tags_all: vec!["a".into(), "b".into()],
            files: vec!["D:\\p\\src\\x.rs".into()],
            file_prefix: Some("src/".into()),
            since: DateTime::from_timestamp_millis(5),
            ..Default::default()
        };
        let c = f.clauses(Some("D:\\p"));
        assert_eq!(c[0], Clause::Any(IndexName::Kind, vec!["1".into()]));
        assert_eq!(c[1], Clause::Any(IndexName::Tag, vec!["a".into()]), "tags_all: one clause per tag");
        assert_eq!(
            c[3],
            Clause::Any(IndexName::File, vec!["D:/p/src/x.rs".into(), "d:/p/src/x.rs".into(), "src/x.rs".into()])
        );
        assert_eq!(c[4], Clause::Prefix(IndexName::File, vec!["src/".into()]));
        assert_eq!(c[5], Clause::TimeRange(5, i64::MAX));
    }

    #[test]
    fn questions_about_a_standing_choice_ask_about_a_decision() {
        for q in [
            "where do we keep user sessions and why?",
            "What do we use for the job queue, and why?",
            "why do we keep the tokens in Redis?",
            "Why do we still use Postgres for the queue?",
            "Why did we drop Sonnet?",
            "为什么选 Redis？",
            "세션 저장소로 어떤 걸 선택했지?",
        ] {
            assert!(asks_about_a_decision(q), "{q}");
        }
        for q in [
            "where do we keep user sessions?",
            "why is the login endpoint failing?",
            "what broke and why?",
            "why do we get a 500 on expired tokens?",
            "why do we keep getting 401s on login?",
            "why are we running out of memory?",
            "how do we fix this and why did it break?",
        ] {
            assert!(!asks_about_a_decision(q), "{q}");
        }
    }

    #[test]
    fn bad_queries_say_what_to_fix() {
        let q = |t: &str, limit| Query { limit, ..Query::new(t) };
        assert!(matches!(q(" ", 10).validate(), Err(Error::EmptyQuery)));
        assert!(matches!(q("x", 0).validate(), Err(Error::ZeroLimit)));
        assert!(matches!(q("x", MAX_LIMIT + 1).validate(), Err(Error::LimitTooLarge { .. })));
        assert!(matches!(q(&"x".repeat(MAX_QUERY_BYTES + 1), 1).validate(), Err(Error::QueryTooLong { .. })));
        let mut inverted = Query::new("x");
        inverted.filter.since = DateTime::from_timestamp_millis(10);
        inverted.filter.until = DateTime::from_timestamp_millis(5);
        assert!(matches!(inverted.validate(), Err(Error::InvertedTimeRange { .. })));
        assert!("HYBRID".parse::<SearchMode>().is_ok() && "x".parse::<SearchMode>().is_err());
        let mut r = Query::new("x");
        r.ranking.fusion = Fusion::Rrf { k: f32::NAN };
        assert!(matches!(r.validate(), Err(Error::InvalidArgument(m)) if m.contains("RRF k")));
        r.ranking = Ranking {
            recent: Some(crate::search::ranking::Recency { half_life_days: 0.0, ..Default::default() }),
            ..Default::default()
        };
        assert!(matches!(r.validate(), Err(Error::InvalidArgument(m)) if m.contains("half-life")));
        r.ranking = Ranking { gloss: -1.0, ..Default::default() };
        assert!(matches!(r.validate(), Err(Error::InvalidArgument(m)) if m.contains("gloss")));
        for closing in [-1.0, f32::NAN] {
            r.ranking = Ranking { closing, ..Default::default() };
            assert!(matches!(r.validate(), Err(Error::InvalidArgument(m)) if m.contains("closing")));
        }
    }
}
