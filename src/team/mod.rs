//! The team store: a project's scrubbed documents, with their vectors, tags, files, commits and
//! decisions, in PostgreSQL with pgvector, so a team searches one memory across people and
//! machines. The embedded store stays the source of truth for a person's own sessions; a push
//! sends what it holds (never a raw transcript: documents are scrubbed before they are stored).
//!
//! Layout: one schema per tenant (`cdx_<tenant>`), in it a catalog of projects, the tombstones
//! of forgotten sessions, and per project a documents table and a vectors table per embedding
//! model (a team may migrate models). Words are matched through Postgres full text over the
//! tokens convdex's own analyser produces (Chinese, Japanese and Korean bigrams included), as
//! `simple` lexemes; vectors through pgvector's HNSW index, or an exact scan when a filter is
//! set (pgvector 0.6.2 filters after the graph walk and can return fewer hits than asked).
//!
//! Who sees what: a database role per member; [`TeamStore::grant`] gives a role a tenant (every
//! project, now and later) or one project of it, [`TeamStore::revoke`] takes it back. Tables
//! are per project, so a grant on a project's tables is the boundary between rows, and the
//! database enforces it for any client, SQL included.

mod access;
mod bulk;
mod pull;
mod reads;
mod search;
mod words;

use crate::sync::Locked;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use postgres::{Client, NoTls};
use serde::Serialize;

use crate::doc::Document;
use crate::error::{Error, Result};
use crate::index::Index;

pub use bulk::BULK_FROM;
pub use pull::PullReport;
pub use reads::READER_NAME;
pub use search::{TeamHit, TeamQuery};

/// Documents sent per transaction: a push killed between two resumes from the first batch
/// that did not commit.
pub const PUSH_BATCH: usize = 200;

/// Projects of fewer documents than this have their word statistics counted exactly on every
/// search ([`TeamStore::with_exact_up_to`]).
pub const EXACT_UP_TO: usize = 20_000;

/// Connections a team search reads on at most, each asking one project at a time
/// ([`TeamStore::with_readers`]).
pub const TEAM_READERS: usize = 4;

/// A connection to a team store.
pub struct TeamStore {
    client: Mutex<Client>,
    /// The URL as given, to open reading connections.
    url: String,
    /// Reading connections opened by earlier searches, kept for the next.
    spare: Mutex<Vec<Client>>,
    /// Reading connections open (spare or in use), at most `readers`.
    opened: std::sync::atomic::AtomicUsize,
    /// When the server last refused a reading connection: none is asked for a while after.
    refused: Mutex<Option<std::time::Instant>>,
    readers: usize,
    batch: usize,
    exact_up_to: f64,
    /// The URL without its password, for messages.
    shown: String,
}

/// What a push did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PushReport {
    /// Collections pushed.
    pub collections: usize,
    /// Documents sent (new or changed).
    pub sent: usize,
    /// Documents the team store already held as they are.
    pub unchanged: usize,
    /// Documents of sessions the team forgot: never sent again.
    pub forgotten: usize,
    /// Documents without vectors yet (sent, searchable by words; the next push adds vectors).
    pub without_vectors: usize,
    /// Collections whose documents were loaded before their vector index was built (a first
    /// push of at least [`BULK_FROM`] documents).
    pub bulk_loaded: usize,
    /// Collections (`tenant/project`) left without a vector index: a bulk load was cut short
    /// and this role may not build the index (only the tables' owner may). Their searches scan
    /// the vectors exactly; a push by the owner builds it.
    pub without_vector_index: Vec<String>,
}

/// A quoted SQL identifier of at most 63 bytes (Postgres cuts longer ones silently): `prefix`
/// and `name`, the name's tail replaced by a hash when it would not fit.
pub(crate) fn ident(prefix: &str, name: &str) -> String {
    let mut id = format!("{prefix}{name}");
    if id.len() > 63 {
        let hash = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(name.as_bytes()));
        let mut head = String::new();
        for c in id.chars() {
            if head.len() + c.len_utf8() > 63 - 17 {
                break;
            }
            head.push(c);
        }
        id = format!("{head}_{hash}");
    }
    format!("\"{}\"", id.replace('"', "\"\""))
}

/// The schema of a tenant.
pub(crate) fn schema(tenant: &str) -> String {
    ident("cdx_", tenant)
}

/// The documents table of a project.
pub(crate) fn docs_table(tenant: &str, project: &str) -> String {
    format!("{}.{}", schema(tenant), ident("d_", project))
}

/// The vectors table of a project for one model.
pub(crate) fn vectors_table(tenant: &str, project: &str, model: &str) -> String {
    format!("{}.{}", schema(tenant), ident("v_", &format!("{project}/{model}")))
}

/// A pgvector literal.
pub(crate) fn vector_literal(v: &[f32]) -> String {
    let mut s = String::with_capacity(v.len() * 10 + 2);
    s.push('[');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&x.to_string());
    }
    s.push(']');
    s
}

/// Replaces U+0000 in every string of `v` with U+FFFD: PostgreSQL's text and jsonb cannot hold
/// it, and one such character in a transcript would otherwise fail its whole batch.
fn without_nul(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::String(s) if s.contains('\0') => *s = s.replace('\0', "\u{FFFD}"),
        serde_json::Value::Array(items) => items.iter_mut().for_each(without_nul),
        serde_json::Value::Object(fields) => fields.values_mut().for_each(without_nul),
        _ => {}
    }
}

/// The lexemes a document is matched by: convdex's analyser, lower-cased, each once.
pub(crate) fn lexemes(text: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    crate::lexical::tokenize::analyze(text)
        .into_iter()
        .map(|t| t.text.to_lowercase())
        .filter(|t| !t.is_empty() && seen.insert(t.clone()))
        .collect()
}

fn db_error(store: &str, e: postgres::Error) -> Error {
    let fix = match e.code() {
        Some(c) if *c == postgres::error::SqlState::INSUFFICIENT_PRIVILEGE => {
            "ask the team store's owner for a grant (`convdex team grant ROLE --tenant T [--project P]`)"
        }
        Some(c)
            if *c == postgres::error::SqlState::UNDEFINED_FILE
                || *c == postgres::error::SqlState::FEATURE_NOT_SUPPORTED =>
        {
            "the server needs the pgvector extension (0.6 or later): `CREATE EXTENSION vector` as its owner"
        }
        None => "check that the server runs and the URL (host, port, user, database) is right",
        _ => "see the database's message; the command can be run again (a push resumes where it stopped)",
    };
    let reason = match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    };
    Error::Team { store: store.to_string(), reason, fix: fix.to_string() }
}

impl TeamStore {
    /// Connects to the team store at `url` (`postgres://user@host/db`, or key-value form
    /// `host=/path/to/socket user=… dbname=…`).
    pub fn connect(url: &str) -> Result<TeamStore> {
        let shown = redact_url(url);
        let client = Client::connect(url, NoTls).map_err(|e| db_error(&shown, e))?;
        Ok(TeamStore {
            client: Mutex::new(client),
            url: url.to_string(),
            spare: Mutex::new(Vec::new()),
            opened: std::sync::atomic::AtomicUsize::new(0),
            refused: Mutex::new(None),
            readers: TEAM_READERS,
            batch: PUSH_BATCH,
            exact_up_to: EXACT_UP_TO as f64,
            shown,
        })
    }

    /// How many connections a search reads on at most, each asking one project at a time
    /// (default [`TEAM_READERS`]; at least 1: 1 asks the projects in turn on the store's own
    /// connection). They are opened as a search first needs them and kept for the next; a
    /// server that refuses more connections is asked on those it gave.
    pub fn with_readers(mut self, connections: usize) -> TeamStore {
        self.readers = connections.max(1);
        self
    }

    /// Documents per transaction of a push (default [`PUSH_BATCH`]; at least 1).
    pub fn with_batch(mut self, documents: usize) -> TeamStore {
        self.batch = documents.max(1);
        self
    }

    /// Projects of fewer documents than this (by the planner's statistics, which a push
    /// refreshes) have their word statistics (document count, mean length, each question word's
    /// document frequency) counted exactly on every search; a larger one's are read from a
    /// sample, and its common words choose no candidates (docs/team.md). Default
    /// [`EXACT_UP_TO`].
    pub fn with_exact_up_to(mut self, documents: usize) -> TeamStore {
        self.exact_up_to = documents as f64;
        self
    }

    /// The store's URL without its password.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    pub(crate) fn with<T>(&self, f: impl FnOnce(&mut Client) -> std::result::Result<T, postgres::Error>) -> Result<T> {
        let mut c = self.client.locked();
        f(&mut c).map_err(|e| db_error(&self.shown, e))
    }

    /// A stored document's JSON, read back; `whose` (`tenant/project`) names it in the error.
    pub(crate) fn decode(&self, json: &str, whose: &str) -> Result<Document> {
        serde_json::from_str(json).map_err(|e| Error::Team {
            store: self.shown.clone(),
            reason: format!("a stored document of {whose} does not decode ({e})"),
            fix: "push the project again from a machine that holds it (`convdex push`)".into(),
        })
    }

    /// Creates what a team store needs once (the pgvector extension; run by its owner).
    pub fn init(&self) -> Result<()> {
        self.with(|c| c.batch_execute("CREATE EXTENSION IF NOT EXISTS vector"))
    }

    /// Creates a tenant's schema and a project's tables if they are missing (serialised by an
    /// advisory lock: two machines pushing at once create them once).
    /// `root` is the project's folder on the pushing machine: a file typed absolute in a team
    /// search matches the paths stored relative to it, as it does locally.
    fn ensure_project(&self, tenant: &str, project: &str, root: Option<&str>, model: &str, dim: usize) -> Result<()> {
        let s = schema(tenant);
        let (d, v) = (docs_table(tenant, project), vectors_table(tenant, project, model));
        // Already there: nothing to create (a member may write rows without creating tables).
        let there: bool = self.with(|c| {
            Ok(c.query_one("SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL", &[&d, &v])?.get(0))
        })?;
        if there {
            // A project first pushed before its folder was recorded (before 2026-11-28) gets it
            // now, from a role that may write the catalog.
            if let Some(root) = root {
                let projects = format!("{s}.projects");
                self.with(|c| {
                    let may: bool = c.query_one("SELECT has_table_privilege($1, 'UPDATE')", &[&projects])?.get(0);
                    if may {
                        c.execute(
                            &format!("UPDATE {projects} SET path = $2 WHERE project = $1 AND path IS NULL"),
                            &[&project, &root],
                        )?;
                    }
                    Ok(())
                })?;
            }
            return Ok(());
        }
        let ddl = format!(
            "CREATE SCHEMA IF NOT EXISTS {s};
             CREATE TABLE IF NOT EXISTS {s}.projects (project text PRIMARY KEY, path text);
             CREATE TABLE IF NOT EXISTS {s}.models (project text, model text, dim int NOT NULL,
                 PRIMARY KEY (project, model));
             CREATE TABLE IF NOT EXISTS {s}.forgotten (project text, session_id text,
                 at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (project, session_id));
             CREATE TABLE IF NOT EXISTS {d} (id uuid PRIMARY KEY, session_id text NOT NULL,
                 kind text NOT NULL, ts timestamptz NOT NULL, content text NOT NULL,
                 tags text[] NOT NULL, domain text, files text[] NOT NULL, agent text,
                 doc jsonb NOT NULL, hash text NOT NULL, words tsvector NOT NULL);
             CREATE INDEX IF NOT EXISTS {di} ON {d} USING gin (words);
             CREATE INDEX IF NOT EXISTS {ds} ON {d} (session_id);
             CREATE INDEX IF NOT EXISTS {dt} ON {d} (ts);
             CREATE TABLE IF NOT EXISTS {v} (id uuid NOT NULL REFERENCES {d} (id) ON DELETE CASCADE,
                 chunk int NOT NULL, embedding vector({dim}) NOT NULL, PRIMARY KEY (id, chunk));
             CREATE INDEX IF NOT EXISTS {vi} ON {v} USING hnsw (embedding vector_cosine_ops);",
            di = ident("di_", project),
            ds = ident("ds_", project),
            dt = ident("dt_", project),
            vi = bulk::vector_index(project, model),
        );
        self.with(|c| {
            let mut tx = c.transaction()?;
            tx.execute("SELECT pg_advisory_xact_lock(hashtext('convdex schema'))", &[])?;
            tx.batch_execute(&ddl)?;
            access::secure_in(&mut tx, tenant)?;
            tx.execute(
                &format!(
                    "INSERT INTO {s}.projects (project, path, docs) VALUES ($1, $2, $3)
                     ON CONFLICT (project) DO UPDATE SET docs = EXCLUDED.docs WHERE {s}.projects.docs IS NULL"
                ),
                &[&project, &root, &d],
            )?;
            tx.execute(
                &format!("INSERT INTO {s}.models (project, model, dim) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING"),
                &[&project, &model, &(dim as i32)],
            )?;
            tx.commit()
        })
    }

    /// Sends every collection of `index` (or only `project`'s) to the team store: documents new
    /// or changed since the last push, in batches (each one transaction; [`TeamStore::with_batch`]), sorted by
    /// id so two machines pushing the same project lock rows in the same order. Idempotent
    /// (ids are deterministic; a document the store holds as it is is not sent), resumable
    /// (a killed push has committed whole batches; the next sends the rest) and incremental. A
    /// session the team forgot is never sent again.
    pub fn push(&self, index: &Index, project: Option<&str>) -> Result<PushReport> {
        let mut report = PushReport::default();
        for info in index.collections_of(project)? {
            let coll = index.collection(&info.tenant, &info.project)?;
            let embedder = coll.embedder();
            let (model, dim) = (embedder.model_id().to_string(), embedder.dim());
            let root = coll.meta()?.project_path;
            self.ensure_project(&info.tenant, &info.project, root.as_deref(), &model, dim)?;
            let (d, v) = (docs_table(&info.tenant, &info.project), vectors_table(&info.tenant, &info.project, &model));
            let s = schema(&info.tenant);
            let held: HashMap<uuid::Uuid, String> = self.with(|c| {
                Ok(c.query(&format!("SELECT id, hash FROM {d}"), &[])?
                    .iter()
                    .map(|r| (r.get::<_, uuid::Uuid>(0), r.get::<_, String>(1)))
                    .collect())
            })?;
            let forgotten: HashSet<String> = self.with(|c| {
                Ok(c.query(&format!("SELECT session_id FROM {s}.forgotten WHERE project = $1"), &[&info.project])?
                    .iter()
                    .map(|r| r.get::<_, String>(0))
                    .collect())
            })?;
            let mut todo = Vec::new();
            for (doc, vectors) in coll.documents_with_vectors()? {
                if forgotten.contains(&doc.session_id) {
                    report.forgotten += 1;
                    continue;
                }
                let hash = doc_hash(&doc, &vectors);
                if held.get(&doc.id) == Some(&hash) {
                    report.unchanged += 1;
                    continue;
                }
                if vectors.is_empty() {
                    report.without_vectors += 1;
                }
                todo.push((doc, vectors, hash));
            }
            todo.sort_by_key(|(doc, _, _)| doc.id);
            if held.is_empty() && self.start_bulk(&info.tenant, &info.project, &model, todo.len())? {
                report.bulk_loaded += 1;
            }
            for batch in todo.chunks(self.batch) {
                report.sent += self.send(&info.project, &s, &d, &v, batch)?;
            }
            // Built after a bulk load, or after one that was killed before its end.
            if !self.ensure_vector_index(&info.tenant, &info.project, &model)? {
                report.without_vector_index.push(format!("{}/{}", info.tenant, info.project));
            }
            if !todo.is_empty() {
                // Fresh planner statistics: a team search reads a project's size from them
                // (`TeamStore::with_exact_up_to`). A member who does not own the tables gets a warning
                // from the server, not an error; autovacuum refreshes them later anyway.
                let _ = self.with(|c| c.batch_execute(&format!("ANALYZE {d}; ANALYZE {v}")));
            }
            report.collections += 1;
        }
        Ok(report)
    }

    fn send(
        &self,
        project: &str,
        s: &str,
        d: &str,
        v: &str,
        batch: &[(Document, Vec<Vec<f32>>, String)],
    ) -> Result<usize> {
        // One statement per table for the whole batch, its rows as one JSON array: a round trip
        // per batch, not per document and chunk.
        let upsert = format!(
            "INSERT INTO {d} (id, session_id, kind, ts, content, tags, domain, files, agent, doc, hash, words)
             SELECT r.id, r.session_id, r.kind, r.ts, r.content, r.tags, r.domain, r.files, r.agent, r.doc, r.hash,
                 array_to_tsvector(r.words)
             FROM jsonb_to_recordset($1::text::jsonb) AS r(id uuid, session_id text, kind text, ts timestamptz,
                 content text, tags text[], domain text, files text[], agent text, doc jsonb, hash text, words text[])
             WHERE NOT EXISTS (SELECT 1 FROM {s}.forgotten f WHERE f.project = $2 AND f.session_id = r.session_id)
             ORDER BY r.id
             ON CONFLICT (id) DO UPDATE SET session_id = EXCLUDED.session_id, kind = EXCLUDED.kind, ts = EXCLUDED.ts,
                 content = EXCLUDED.content, tags = EXCLUDED.tags, domain = EXCLUDED.domain, files = EXCLUDED.files,
                 agent = EXCLUDED.agent, doc = EXCLUDED.doc, hash = EXCLUDED.hash, words = EXCLUDED.words
             RETURNING id"
        );
        let insert_vectors = format!(
            "INSERT INTO {v} (id, chunk, embedding)
             SELECT r.id, r.chunk, r.embedding::vector
             FROM jsonb_to_recordset($1::text::jsonb) AS r(id uuid, chunk int, embedding text)"
        );
        let rows: Vec<serde_json::Value> = batch
            .iter()
            .map(|(doc, _, hash)| {
                serde_json::json!({
                    "id": doc.id,
                    "session_id": doc.session_id,
                    "kind": doc.kind().as_str(),
                    "ts": doc.timestamp.to_rfc3339(),
                    "content": doc.content,
                    "tags": doc.tags,
                    "domain": doc.domain,
                    "files": doc.files_discussed.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(),
                    "agent": doc.agent(),
                    // Through its text, so each number keeps its own shortest form (an f32
                    // turned into a JSON value directly is widened: 0.7 reads 0.699999988…).
                    "doc": serde_json::from_str::<serde_json::Value>(&serde_json::to_string(doc).unwrap_or_default())
                        .unwrap_or_default(),
                    "hash": hash,
                    // The words a local search indexes: with an imported message's speaker,
                    // date and the turn it answers.
                    "words": lexemes(&doc.lexical_text()),
                })
            })
            .collect();
        let mut rows = serde_json::Value::Array(rows);
        without_nul(&mut rows);
        let rows = rows.to_string();
        self.with(|c| {
            let mut tx = c.transaction()?;
            // Shared with other pushes, exclusive with a forget of this project.
            tx.execute("SELECT pg_advisory_xact_lock_shared(hashtext($1))", &[&format!("{s}.{project}")])?;
            // The documents written: not those of a session forgotten meanwhile.
            let written: HashSet<uuid::Uuid> =
                tx.query(&upsert, &[&rows, &project])?.iter().map(|r| r.get::<_, uuid::Uuid>(0)).collect();
            let ids: Vec<uuid::Uuid> = written.iter().copied().collect();
            tx.execute(&format!("DELETE FROM {v} WHERE id = ANY($1)"), &[&ids])?;
            let chunks: Vec<serde_json::Value> = batch
                .iter()
                .filter(|(doc, _, _)| written.contains(&doc.id))
                .flat_map(|(doc, vectors, _)| {
                    vectors.iter().enumerate().map(
                        |(i, vec)| serde_json::json!({ "id": doc.id, "chunk": i, "embedding": vector_literal(vec) }),
                    )
                })
                .collect();
            if !chunks.is_empty() {
                tx.execute(&insert_vectors, &[&serde_json::Value::Array(chunks).to_string()])?;
            }
            tx.commit()?;
            Ok(written.len())
        })
    }

    /// Deletes a session of `tenant`'s `project` for everyone and leaves a tombstone, so no
    /// machine pushes it again. Returns the documents deleted.
    pub fn forget(&self, tenant: &str, project: &str, session_id: &str) -> Result<usize> {
        let s = schema(tenant);
        let d = docs_table(tenant, project);
        self.with(|c| {
            let mut tx = c.transaction()?;
            tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&format!("{s}.{project}")])?;
            tx.execute(
                &format!("INSERT INTO {s}.forgotten (project, session_id) VALUES ($1, $2) ON CONFLICT DO NOTHING"),
                &[&project, &session_id],
            )?;
            let n = tx.execute(&format!("DELETE FROM {d} WHERE session_id = $1"), &[&session_id])?;
            tx.commit()?;
            Ok(n as usize)
        })
    }

    /// The project's folder as its first push recorded it (`None`: not recorded).
    pub(crate) fn project_root(&self, tenant: &str, project: &str) -> Result<Option<String>> {
        let s = schema(tenant);
        self.read(|c| {
            Ok(c.query_opt(&format!("SELECT path FROM {s}.projects WHERE project = $1"), &[&project])?
                .and_then(|r| r.get::<_, Option<String>>(0)))
        })
    }

    /// Whether `project` of `tenant` holds vectors of `model`.
    pub(crate) fn has_model(&self, tenant: &str, project: &str, model: &str) -> Result<bool> {
        self.read(|c| {
            Ok(c.query_one(
                &format!("SELECT EXISTS (SELECT 1 FROM {}.models WHERE project = $1 AND model = $2)", schema(tenant)),
                &[&project, &model],
            )?
            .get(0))
        })
    }
}

/// What a document is sent as, hashed: a push sends it again only when this changes. When it
/// was indexed is left out: two machines holding the same session do not send it in turns.
fn doc_hash(doc: &Document, vectors: &[Vec<f32>]) -> String {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    // What is sent besides the document: a change here sends every document once more. v2
    // (2026-11-28): the words include an imported message's header.
    h.update(b"words v2");
    let mut same = doc.clone();
    same.indexed_at = chrono::DateTime::<chrono::Utc>::UNIX_EPOCH;
    h.update(serde_json::to_string(&same).unwrap_or_default().as_bytes());
    for v in vectors {
        for x in v {
            h.update(&x.to_le_bytes());
        }
    }
    format!("{:032x}", h.digest128())
}

/// A database URL without its password.
pub fn redact_url(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        if let Some((auth, host)) = rest.rsplit_once('@') {
            let user = auth.split(':').next().unwrap_or("");
            return format!("{scheme}://{user}@{host}");
        }
        return url.to_string();
    }
    url.split_whitespace()
        .map(|kv| if kv.starts_with("password=") { "password=…" } else { kv })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_fit_postgres_and_stay_apart() {
        let long = "p".repeat(64);
        let a = ident("d_", &long);
        assert!(a.len() <= 65, "{a}"); // 63 and the quotes
        assert_ne!(a, ident("d_", &format!("{}q", "p".repeat(63))));
        assert_eq!(ident("d_", "web\"app"), "\"d_web\"\"app\"");
        assert_eq!(vector_literal(&[0.5, -1.0]), "[0.5,-1]");
        assert_eq!(redact_url("postgres://alice:s3cret@db:5432/team"), "postgres://alice@db:5432/team");
        assert_eq!(redact_url("host=/tmp/pg user=bob password=x"), "host=/tmp/pg user=bob password=…");
        let words = lexemes("数据库 Redis redis");
        let unique: HashSet<&String> = words.iter().collect();
        assert!(words.contains(&"数据".to_string()) && unique.len() == words.len(), "{words:?}");
    }
}
