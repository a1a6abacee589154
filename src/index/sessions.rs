//! Sessions instead of messages: "which session was it?" answered by ranking each session by
//! its best hit among a fixed pool of hits.

use serde::Serialize;

use crate::error::Result;
use crate::index::Index;
use crate::index::across::{Across, ProjectHit};
use crate::search::{Hit, MAX_LIMIT, Query};

/// Hits pooled by [`Index::search_sessions`] before they are grouped: enough for a first page
/// of sessions, and the same pool for every limit up to 10 sessions.
pub const SESSION_POOL: usize = 100;

/// Hits kept per session in a [`SessionFound`].
pub const SESSION_HITS: usize = 3;

/// One session found by [`Index::search_sessions`].
#[derive(Debug, Clone, Serialize)]
pub struct SessionFound {
    /// The collection's project name.
    pub project: String,
    /// The session.
    pub session_id: String,
    /// Its best hit's score: how sessions are ordered (comparable within one search).
    pub score: f32,
    /// Its best hit's relevance, 0–100.
    pub relevance: u8,
    /// How many of the pooled hits came from this session.
    pub matched: usize,
    /// Its best hits, best first, at most [`SESSION_HITS`].
    pub hits: Vec<Hit>,
}

/// The pool a session search asks for: [`SESSION_POOL`] hits, or ten per session asked when
/// that is more (at most [`MAX_LIMIT`]).
pub fn pool_query(query: &Query) -> Query {
    let mut pooled = query.clone();
    pooled.limit = (query.limit.saturating_mul(10)).clamp(SESSION_POOL, MAX_LIMIT);
    pooled
}

/// Groups hits (best first) by project and session: each session ranked by its best hit, in
/// the order the hits came, at most `limit` sessions.
pub fn group_sessions(hits: Vec<ProjectHit>, limit: usize) -> Vec<SessionFound> {
    let mut out: Vec<SessionFound> = Vec::new();
    for ph in hits {
        let at = out.iter().position(|s| s.project == ph.project && s.session_id == ph.hit.doc.session_id);
        match at {
            Some(i) => {
                let s = &mut out[i];
                s.matched += 1;
                if s.hits.len() < SESSION_HITS {
                    s.hits.push(ph.hit);
                }
            }
            None if out.len() < limit => out.push(SessionFound {
                project: ph.project,
                session_id: ph.hit.doc.session_id.clone(),
                score: ph.hit.score,
                relevance: ph.hit.relevance,
                matched: 1,
                hits: vec![ph.hit],
            }),
            None => {}
        }
    }
    out
}

impl Index {
    /// The sessions that best answer `query`, best first, across projects (or in `project`):
    /// the query is asked like [`Index::search`] for a pool of hits ([`pool_query`]: 100, or
    /// ten per session asked), and each session is ranked by its best hit in it; its best
    /// [`SESSION_HITS`] hits come with it. `query.limit` is the number of sessions; the first
    /// `k` sessions do not depend on it up to 10. Every filter applies to the hits, so a
    /// filter on decisions finds the sessions of the best decisions.
    pub fn search_sessions(&self, project: Option<&str>, query: &Query) -> Result<Across<Vec<SessionFound>>> {
        query.validate()?;
        let Across { found, skipped } = self.search(project, &pool_query(query))?;
        Ok(Across { found: group_sessions(found, query.limit), skipped })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{Document, Role};
    use crate::search::{Plan, PlanPath, SearchMode};

    fn hit(project: &str, session: &str, score: f32) -> ProjectHit {
        let doc = Document::message(session, &format!("{score}"), 0, Role::User, "text");
        let plan = Plan {
            path: PlanPath::Exact,
            mode: SearchMode::Hybrid,
            candidates: 1,
            total: 1,
            selectivity: 1.0,
            unembedded: 0,
        };
        ProjectHit {
            project: project.into(),
            hit: Hit {
                doc,
                score,
                relevance: (score * 10.0) as u8,
                folded: 0,
                chunk: 0,
                signals: Default::default(),
                snippet: None,
                plan,
            },
        }
    }

    #[test]
    fn sessions_rank_by_their_best_hit_and_keep_their_best_hits() {
        let hits = vec![
            hit("a", "s1", 9.0),
            hit("a", "s1", 8.0),
            hit("b", "s1", 7.5),
            hit("a", "s2", 7.0),
            hit("a", "s1", 6.0),
            hit("a", "s1", 5.0),
            hit("a", "s3", 4.0),
        ];
        let s = group_sessions(hits.clone(), 10);
        let order: Vec<(&str, &str)> = s.iter().map(|s| (s.project.as_str(), s.session_id.as_str())).collect();
        assert_eq!(
            order,
            [("a", "s1"), ("b", "s1"), ("a", "s2"), ("a", "s3")],
            "same id in two projects: two sessions"
        );
        assert_eq!((s[0].score, s[0].matched, s[0].hits.len()), (9.0, 4, SESSION_HITS));
        assert_eq!(s[0].hits.iter().map(|h| h.score).collect::<Vec<_>>(), [9.0, 8.0, 6.0]);
        // Fewer sessions asked: the first ones, unchanged.
        let two = group_sessions(hits, 2);
        assert_eq!(two.len(), 2);
        assert_eq!((two[0].matched, two[1].session_id.as_str()), (4, "s1"));
    }

    #[test]
    fn the_pool_does_not_depend_on_a_small_limit() {
        let mut q = Query::new("x");
        for (limit, pool) in [(1, SESSION_POOL), (10, SESSION_POOL), (30, 300), (MAX_LIMIT, MAX_LIMIT)] {
            q.limit = limit;
            assert_eq!(pool_query(&q).limit, pool, "limit {limit}");
        }
    }
}
