//! Memory that comes to the agent: the project a working directory belongs to, the brief a
//! session starts with ([`Index::session_brief`]) and what a prompt recalls from earlier
//! sessions ([`Index::recall`]). What the `SessionStart` and `UserPromptSubmit` hooks print.

use std::collections::HashSet;

use chrono::{DateTime, Utc};

use crate::doc::DocKind;
use crate::error::Result;
use crate::index::across::ProjectHit;
use crate::index::{CollectionInfo, Index};
use crate::lexical::{LexicalQuery, analyze};
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
    /// data dir's other projects fill the rest, at the same threshold, each marked with its
    /// project. Only decisions cross projects (a message of another project is rarely about
    /// this one). Default: false: replayed on the 474 real prompts of the shared corpus (docs/usage.md,
    /// «Replayed as history happened»), no decision of another project was ever judged relevant
    /// to a prompt, and looking costs opening every project's lexical index (about 40 ms).
    pub other_projects: bool,
    /// A hit whose text is the prompt itself (the same words asked in another session) is left
    /// out: it tells the agent nothing the prompt does not. Default: true.
    pub skip_repeats: bool,
    /// A hit must contain at least this many of the prompt's search terms (distinct words
    /// after stop words, as the lexical index analyses them; all of them when the prompt has
    /// fewer): a message that shares one word with a prompt of several ("option", "start") is
    /// rarely about it, however rare the word. Applies in every [`RecallOptions::mode`]: 0
    /// turns it off (for a semantic recall across languages, where words cannot match).
    /// Default: 2.
    pub min_shared_terms: usize,
}

/// The default of [`RecallOptions::min_relevance`]: the relevance above which the held-out
/// ranking sets found the calibration about right (docs/ranking.md, "How results are ranked"). Replayed
/// on real prompts (docs/usage.md, "Replayed as history happened"), relevant and irrelevant hits
/// scored alike above it, so a higher bar would not separate them.
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
            other_projects: false,
            skip_repeats: true,
            min_shared_terms: 2,
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
    /// relevant enough to show unasked ([`RecallOptions::min_relevance`] and
    /// [`RecallOptions::min_shared_terms`]), best first, then, when asked
    /// ([`RecallOptions::other_projects`]), decisions of other projects, at most
    /// [`RecallOptions::limit`] in all. Empty when the prompt is too short to mean anything on
    /// its own.
    pub fn recall(&self, info: &CollectionInfo, prompt: &str, options: &RecallOptions) -> Result<Vec<ProjectHit>> {
        let text = crate::text::prefix_bytes(prompt.trim(), crate::search::MAX_QUERY_BYTES);
        if text.split_whitespace().count() < options.min_words.max(1) {
            return Ok(Vec::new());
        }
        let mut query = Query {
            text: text.to_string(),
            filter: Filter { until: options.until, ..Filter::default() },
            mode: Some(options.mode),
            limit: RECALL_POOL.max(options.limit),
            ranking: self.default_ranking(),
        };
        // The prompt's own words only: what is shown unasked must share words with the prompt
        // (`min_shared_terms`), and its bar was measured without translation.
        query.ranking.translation = 0.0;
        // While an indexing run holds the collection, it answers (see [`Index::while_serving`]).
        let scope = crate::warm::Scope::Collection(info.tenant.clone(), info.project.clone());
        let hits = match self.ask_writer(scope.clone(), &query) {
            Some(found) => found.found,
            None => self.search_scope(&scope, &query)?.found,
        };
        let mut out: Vec<ProjectHit> = Vec::new();
        let prompt_words = words(text);
        let terms: HashSet<String> = LexicalQuery::parse(text).terms().into_iter().collect();
        let shared = options.min_shared_terms.min(terms.len());
        // Cheapest test first: most candidates fall below the threshold.
        // A decision is said only when it may be stated as in force (see
        // [`crate::derive::life::trusted`]).
        let keep = |h: &ProjectHit, out: &[ProjectHit]| {
            h.hit.relevance >= options.min_relevance
                && (h.hit.doc.kind() != DocKind::Decision || crate::derive::life::trusted(&h.hit.doc))
                && options.exclude_session.as_deref() != Some(h.hit.doc.session_id.as_str())
                && !out.iter().any(|o| o.hit.doc.content == h.hit.doc.content)
                && !(options.skip_repeats && words(&h.hit.doc.content) == prompt_words)
                && shares(&h.hit.doc.content, &terms, shared)
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

/// `content` holds at least `n` of `terms` (analysed as the lexical index analyses it).
fn shares(content: &str, terms: &HashSet<String>, n: usize) -> bool {
    let mut found = HashSet::new();
    n == 0
        || analyze(content).into_iter().any(|t| {
            if terms.contains(&t.text) {
                found.insert(t.text);
            }
            found.len() >= n
        })
}

/// The words of a text, lower-cased: two texts with the same words are the same prompt.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// Tokens of `text` as `cl100k_base` counts them (the count [`Index::session_brief`] budgets).
pub fn count_tokens(text: &str) -> usize {
    tiktoken_rs::cl100k_base_singleton().encode_ordinary(text).len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(prompt: &str) -> HashSet<String> {
        LexicalQuery::parse(prompt).terms().into_iter().collect()
    }

    #[test]
    fn a_hit_shares_terms_as_the_index_reads_them() {
        // Stop words are not terms: "that is not an option" asks for `not` and `option`.
        let t = terms("that is not an option");
        assert!(!shares("the first option sounds easy", &t, 2));
        assert!(shares("the first option sounds easy", &t, 1));
        assert!(shares("this is not the option we want", &t, 2));
        // Identifiers and paths count by their parts too, and CJK text by its terms.
        let t = terms("why does src/auth.rs reject 数据库连接 tokens?");
        assert!(shares("auth.rs now rejects expired tokens", &t, 2));
        assert!(shares("数据库连接 times out", &t, 2));
        assert!(!shares("tokens", &t, 2));
        assert!(shares("anything", &HashSet::new(), 0));
    }
}
