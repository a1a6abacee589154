//! The decision ledger: each decision with its status (as of a date, when asked), whether it may
//! be stated as in force, what replaced it and what it replaced, and the commits and files that
//! followed it in its session.

use serde::Serialize;
use uuid::Uuid;

use super::Index;
use super::across::{Across, DecisionFilter};
use crate::doc::{DocBody, Document, FileAction};
use crate::error::Result;

/// A decision that replaced another, or was replaced ([`LedgerEntry`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Replacement {
    /// Its id.
    pub id: Uuid,
    /// Its summary.
    pub summary: String,
    /// When it was made.
    pub time: chrono::DateTime<chrono::Utc>,
}

/// What followed a decision in its session, up to the session's next decision.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FollowUp {
    /// Commits made, `sha subject` (10 at most).
    pub commits: Vec<String>,
    /// Files created, edited or deleted (20 at most).
    pub files: Vec<String>,
}

/// One decision of the ledger ([`Index::ledger`]).
#[derive(Debug, Clone, Serialize)]
pub struct LedgerEntry {
    /// The collection's project name.
    pub project: String,
    /// The decision (its status as of the ledger's date).
    pub decision: Document,
    /// It may be stated as in force ([`crate::derive::life::trusted`]); otherwise a candidate.
    pub trusted: bool,
    /// The decision that replaced it, if any (by the ledger's date).
    pub replaced_by: Option<Replacement>,
    /// The decisions it replaced.
    pub replaces: Vec<Replacement>,
    /// Commits and files that followed it in its session.
    pub followed_by: FollowUp,
}

impl Index {
    /// The decisions [`Index::decisions`] returns for `filter`, each with what replaced it,
    /// what it replaced and what followed it; those that may be stated as in force first, then
    /// the candidates, each part newest first.
    pub fn ledger(&self, project: Option<&str>, filter: &DecisionFilter) -> Result<Across<Vec<LedgerEntry>>> {
        let Across { found, skipped } = self.decisions(project, filter)?;
        // Every decision of the projects concerned, for the links (a replacement need not pass
        // the filter), with the same as-of view.
        let everything = DecisionFilter { all: true, file: None, tag: None, since: None, as_of: filter.as_of };
        let all = self.decisions(project, &everything)?.found;
        let replacement = |id: &Uuid| {
            all.iter().find(|(_, d)| d.id == *id).and_then(|(_, d)| match &d.body {
                DocBody::Decision(f) => Some(Replacement { id: d.id, summary: f.summary.clone(), time: d.timestamp }),
                _ => None,
            })
        };
        let mut sessions: std::collections::HashMap<(String, String), Vec<Document>> = std::collections::HashMap::new();
        let mut out = Vec::with_capacity(found.len());
        for (p, d) in found {
            let DocBody::Decision(f) = &d.body else { continue };
            let key = (p.clone(), d.session_id.clone());
            if !sessions.contains_key(&key) {
                let docs = self
                    .collections_of(Some(&p))?
                    .into_iter()
                    .filter(|i| i.project == p)
                    .map(|i| self.collection(&i.tenant, &i.project).and_then(|c| c.session_documents(&d.session_id)))
                    .next()
                    .transpose()?
                    .unwrap_or_default();
                sessions.insert(key.clone(), docs);
            }
            let followed_by = follow_up(&d, &sessions[&key]);
            out.push(LedgerEntry {
                project: p,
                trusted: crate::derive::life::trusted(&d),
                replaced_by: f.superseded_by.as_ref().and_then(replacement),
                replaces: f.supersedes.iter().filter_map(replacement).collect(),
                followed_by,
                decision: d,
            });
        }
        out.sort_by_key(|e| (!e.trusted, std::cmp::Reverse(e.decision.timestamp)));
        Ok(Across { found: out, skipped })
    }
}

/// The commits and changed files of `session`'s messages from `decision` on, until the
/// session's next decision.
fn follow_up(decision: &Document, session: &[Document]) -> FollowUp {
    let until = session
        .iter()
        .filter(|d| matches!(d.body, DocBody::Decision(_)) && d.timestamp > decision.timestamp)
        .map(|d| d.timestamp)
        .min();
    let mut messages: Vec<&Document> = session
        .iter()
        .filter(|d| matches!(d.body, DocBody::Message(_)))
        .filter(|d| d.timestamp >= decision.timestamp && until.is_none_or(|u| d.timestamp < u))
        .collect();
    messages.sort_by_key(|d| d.timestamp);
    let mut out = FollowUp::default();
    for m in messages {
        for c in &m.commits_made {
            let line = format!("{} {}", c.sha, c.message);
            if out.commits.len() < 10 && !out.commits.contains(&line) {
                out.commits.push(line);
            }
        }
        for f in m.files_discussed.iter().filter(|f| f.action != FileAction::Read) {
            if out.files.len() < 20 && !out.files.contains(&f.path) {
                out.files.push(f.path.clone());
            }
        }
    }
    out
}
