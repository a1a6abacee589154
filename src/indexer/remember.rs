//! Notes and decisions stated on purpose (`convdex remember`, the MCP tool `remember`): one
//! decision document (`extraction_method: manual`) in the project's collection, in the session
//! [`MANUAL_SESSION`], searchable at once and shown first in session briefs.

use serde::Serialize;

use crate::doc::{DecisionFields, DecisionStatus, DocBody, DocKind, Document, ExtractionMethod, FileAction, FileRef};
use crate::error::{Error, Result};
use crate::index::Index;
use crate::text::paths::{normalize, relative_to};
use crate::text::{normalize_name, one_line};

/// The session id remembered documents are stored under (`convdex session manual` lists them,
/// `convdex forget --session manual` deletes them).
pub const MANUAL_SESSION: &str = "manual";

/// The longest text [`remember`] accepts, in bytes.
pub const MAX_REMEMBER_BYTES: usize = 16 * 1024;

/// Where a remembered note goes.
#[derive(Debug, Clone, Copy)]
pub enum RememberIn<'a> {
    /// An indexed project, by name (or its name with the `-` suffix that tells apart projects
    /// of the same name).
    Project(&'a str),
    /// The project containing this directory; a new collection for it when no indexed project
    /// does (named after its last component).
    Dir(&'a str),
}

/// What to remember.
#[derive(Debug, Clone, Copy)]
pub struct Remember<'a> {
    /// The note or decision, as it should be read later.
    pub text: &'a str,
    /// Why, when there is a reason worth keeping.
    pub why: Option<&'a str>,
    /// Files it is about (absolute, or relative to the project).
    pub files: &'a [String],
    /// Where it goes.
    pub target: RememberIn<'a>,
    /// Tenant of a collection created for a new directory. Default when `None`:
    /// [`crate::default_tenant`].
    pub tenant: Option<&'a str>,
}

/// What [`remember`] stored.
#[derive(Debug, Clone, Serialize)]
pub struct Remembered {
    /// The project it was stored in.
    pub project: String,
    /// The collection.
    pub collection: String,
    /// The stored document (secrets redacted).
    pub document: Document,
    /// False when the same text was already remembered there (it is stored once).
    pub new: bool,
}

/// Stores `what` as a decision document (`extraction_method: manual`, confidence 1, active),
/// secrets redacted. Remembering the same text in the same project again changes nothing.
pub fn remember(index: &Index, what: &Remember<'_>) -> Result<Remembered> {
    let text = what.text.trim();
    if text.is_empty() {
        return Err(Error::InvalidArgument("nothing to remember: give the note's text".into()));
    }
    if text.len() > MAX_REMEMBER_BYTES {
        return Err(Error::InvalidArgument(format!(
            "the note is {} bytes; remember at most {MAX_REMEMBER_BYTES} bytes (state the decision, link the rest)",
            text.len()
        )));
    }
    let coll = match what.target {
        RememberIn::Project(p) => {
            let infos = index.collections_of(Some(p))?;
            match infos.as_slice() {
                [] => return Err(Error::NoSuchProject { project: normalize_name(p) }),
                [one] => index.collection(&one.tenant, &one.project)?,
                many => {
                    return Err(Error::InvalidArgument(format!(
                        "`{p}` names {} projects ({}); pass the full name",
                        many.len(),
                        many.iter().map(|i| i.project.as_str()).collect::<Vec<_>>().join(", ")
                    )));
                }
            }
        }
        RememberIn::Dir(dir) => match index.project_at(dir)? {
            Some(info) => index.collection(&info.tenant, &info.project)?,
            None => {
                let key = normalize(dir);
                let last = key.trim_end_matches('/').rsplit('/').next().unwrap_or(&key);
                let base = normalize_name(last);
                let tenant = what.tenant.map(str::to_string).unwrap_or_else(super::default_tenant);
                super::collection_for_path(index, &tenant, &base, &key)?
            }
        },
    };
    let root = coll.meta()?.project_path;
    let (clean, _) = crate::text::scrub::scrub(text);
    let why = what.why.map(str::trim).filter(|w| !w.is_empty()).map(|w| crate::text::scrub::scrub(w).0);
    let files: Vec<FileRef> = what
        .files
        .iter()
        .filter(|f| !f.trim().is_empty())
        .map(|f| FileRef {
            path: root.as_deref().map_or_else(|| normalize(f), |r| relative_to(f, r)),
            line_ranges: Vec::new(),
            action: FileAction::Read,
        })
        .collect();
    let content = match &why {
        Some(w) => format!("{clean}\nWhy: {w}"),
        None => clean.clone(),
    };
    let key = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(content.as_bytes()));
    let id = Document::stable_id(MANUAL_SESSION, DocKind::Decision, &key);
    let existing = coll.get(id)?;
    let mut tags = crate::text::enrich::tags(&content, &files);
    tags.push("manual".to_string());
    let document = Document {
        id,
        session_id: MANUAL_SESSION.to_string(),
        timestamp: existing.as_ref().map_or_else(crate::doc::now_millis, |d| d.timestamp),
        domain: crate::text::enrich::domain(&content, &files),
        content,
        tags,
        files_discussed: files,
        commits_made: Vec::new(),
        indexed_at: crate::doc::now_millis(),
        extraction_method: ExtractionMethod::Manual,
        body: DocBody::Decision(DecisionFields {
            summary: one_line(&clean, 200),
            alternatives: Vec::new(),
            reasoning: why,
            confidence: 1.0,
            source_message_uuid: String::new(),
            status: DecisionStatus::Active,
            superseded_by: None,
            supersedes: Vec::new(),
        }),
        answering: None,
        closes_turn: false,
        decides: false,
    };
    let new = existing.is_none();
    if new {
        coll.add(std::slice::from_ref(&document))?;
    }
    let meta = coll.meta()?;
    Ok(Remembered {
        project: meta.project,
        collection: coll.name().to_string(),
        document: existing.unwrap_or(document),
        new,
    })
}
