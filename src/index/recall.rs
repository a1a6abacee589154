//! Memory that comes to the agent: the project a working directory belongs to, the brief a
//! session starts with ([`Index::session_brief`]) and what a prompt recalls from earlier
//! sessions ([`Index::recall`]). What the `SessionStart` and `UserPromptSubmit` hooks print.

use chrono::{DateTime, Utc};

use crate::doc::DocKind;
use crate::error::Result;
use crate::index::across::ProjectHit;
use crate::index::{CollectionInfo, Index};
use crate::search::{Filter, Query, SearchMode};
use crate::text::paths::{normalize, relative_to, same_dir};

/// What [`Index::recall`] returns and how it decides. Every field documents its default.
#[derive(Debug, Clone)]
pub struct RecallOptions {
    /// How hits are found. Default: [`SearchMode::Lexical`] (no model to load: a hook runs on
    /// every prompt, and a cold model costs about a second).
    pub mode: SearchMode,
    /// The least relevance (0–100, [`crate::Hit::relevance`]) a hit needs to be shown.
    /// Default: [`DEFAULT_RECALL_RELEVANCE`].
    pub min_relevance: u8,
    /// Hits at most. Default: 3.
    pub limit: usize,
    /// A session whose documents are not recalled (the one the prompt belongs to). Default: none.
    pub exclude_session: Option<String>,
    /// Only documents at or before this time (evaluation replays history up to a prompt).
    /// Default: none.
    pub until: Option<DateTime<Utc>>,
    /// Prompts with fewer words than this recall nothing ("yes", "go on"). Default: 4.
    pub min_words: usize,
    /// When this project recalls fewer than [`RecallOptions::limit`] hits, decisions of the
    /// data dir's other projects fill the rest, at the same threshold: this project first, then
    /// what was decided elsewhere. Only decisions cross projects (a message of another project
    /// is rarely about this one). Default: true.
    pub other_projects: bool,
    /// A hit whose text is the prompt itself (the same words asked in another session) is left
    /// out: it tells the agent nothing the prompt does not. Default: true.
    pub skip_repeats: bool,
}

/// The default of [`RecallOptions::min_relevance`]: the relevance above which the held-out
/// ranking sets found the calibration about right (README, "How results are ranked"). Not yet
/// chosen on a set of real prompts: that measurement is still to be made.
pub const DEFAULT_RECALL_RELEVANCE: u8 = 30;

impl Default for RecallOptions {
    fn default() -> Self {
        RecallOptions {
            mode: SearchMode::Lexical,
            min_relevance: DEFAULT_RECALL_RELEVANCE,
            limit: 3,
            exclude_session: None,
            until: None,
            min_words: 4,
            other_projects: true,
            skip_repeats: true,
        }
    }
}

/// Hits a recall looks at before it filters them (the excluded session's, the weak ones).
const RECALL_POOL: usize = 20;

impl Index {
    /// The collection whose project directory is `dir` or holds it (the deepest such project
    /// when several do), compared in the normal form of paths (`\\` or `/`, any case of a
    /// Windows path). `None` when no indexed project contains `dir`. Reads only the collections'
    /// identity files: nothing is opened.
    pub fn project_at(&self, dir: &str) -> Result<Option<CollectionInfo>> {
        let d = normalize(dir);
        let mut best: Option<(usize, CollectionInfo)> = None;
        for info in self.collections()? {
            let Some(p) = info.project_path.as_deref().filter(|p| !p.is_empty()) else { continue };
            let inside = same_dir(p, &d) || relative_to(&d, p) != d;
            let depth = normalize(p).len();
            if inside && best.as_ref().is_none_or(|(b, _)| depth > *b) {
                best = Some((depth, info));
            }
        }
        Ok(best.map(|(_, i)| i))
    }

    /// The brief a new session of `info`'s project starts with (see [`crate::derive::brief`]):
    /// at most `budget` tokens (`cl100k_base`), the session `exclude_session` left out. `None`
    /// when the project has nothing worth saying.
    pub fn session_brief(
        &self,
        info: &CollectionInfo,
        exclude_session: Option<&str>,
        budget: usize,
    ) -> Result<Option<String>> {
        let c = self.collection(&info.tenant, &info.project)?;
        c.guarded(|c| {
            let summaries = c.documents_of_kind(DocKind::Summary)?;
            let decisions = c.documents_of_kind(DocKind::Decision)?;
            let input = crate::derive::brief::BriefInput {
                project: &info.project,
                summaries: &summaries,
                decisions: &decisions,
                exclude_session,
            };
            Ok(crate::derive::brief::compose(&input, budget, &count_tokens))
        })
    }

    /// What a prompt recalls: decisions and messages of `info`'s project from other sessions
    /// relevant enough to show unasked ([`RecallOptions::min_relevance`]), best first, then
    /// decisions of other projects ([`RecallOptions::other_projects`]), at most
    /// [`RecallOptions::limit`] in all. Empty when the prompt is too short to mean anything on
    /// its own.
    pub fn recall(&self, info: &CollectionInfo, prompt: &str, options: &RecallOptions) -> Result<Vec<ProjectHit>> {
        let text = crate::text::prefix_bytes(prompt.trim(), crate::search::MAX_QUERY_BYTES);
        if text.split_whitespace().count() < options.min_words.max(1) {
            return Ok(Vec::new());
        }
        let query = Query {
            text: text.to_string(),
            filter: Filter { until: options.until, ..Filter::default() },
            mode: Some(options.mode),
            limit: RECALL_POOL.max(options.limit),
            ..Query::new("")
        };
        let c = self.collection(&info.tenant, &info.project)?;
        let hits = c.query(&query)?.hits.into_iter().map(|hit| ProjectHit { project: info.project.clone(), hit });
        let mut out: Vec<ProjectHit> = Vec::new();
        let prompt_words = words(text);
        // Cheapest test first: most candidates fall below the threshold.
        let keep = |h: &ProjectHit, out: &[ProjectHit]| {
            h.hit.relevance >= options.min_relevance
                && options.exclude_session.as_deref() != Some(h.hit.doc.session_id.as_str())
                && !out.iter().any(|o| o.hit.doc.content == h.hit.doc.content)
                && !(options.skip_repeats && words(&h.hit.doc.content) == prompt_words)
        };
        for h in hits {
            if out.len() >= options.limit {
                break;
            }
            if keep(&h, &out) {
                out.push(h);
            }
        }
        if out.len() < options.limit && options.other_projects {
            let query = Query {
                filter: Filter { kinds: vec![DocKind::Decision], ..query.filter.clone() },
                mode: Some(SearchMode::Lexical),
                ..query
            };
            // Other projects are a bonus: one that cannot be read leaves this project's hits.
            let elsewhere = self.search_except(&info.project, &query).map(|a| a.found).unwrap_or_default();
            for h in elsewhere {
                if out.len() >= options.limit {
                    break;
                }
                if keep(&h, &out) {
                    out.push(h);
                }
            }
        }
        Ok(out)
    }
}

/// The words of a text, lower-cased: two texts with the same words are the same prompt.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// Tokens of `text` as `cl100k_base` counts them (the count [`Index::session_brief`] budgets).
pub fn count_tokens(text: &str) -> usize {
    tiktoken_rs::cl100k_base_singleton().encode_ordinary(text).len()
}
