//! The root of a convdex data directory: one sub-directory per collection.

use crate::sync::Locked;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use serde::{Deserialize, Serialize};

pub(crate) mod across;
pub(crate) mod compact;
pub(crate) mod ledger;
pub(crate) mod migrate;
pub(crate) mod recall;
pub(crate) mod repair;
pub(crate) mod resume;
pub(crate) mod serve;
pub(crate) mod sessions;
pub(crate) mod warm;

use crate::collection::{Collection, CollectionMeta, CollectionOptions};
use crate::embed::{EmbedOptions, Embedder, LazyEmbedder};
use crate::error::{Error, Result};
use crate::lexical::{Glossary, GlossarySkip};
use crate::search::Ranking;

/// Options of an [`Index`]. Every field documents its default.
#[derive(Clone, Default)]
pub struct Options {
    /// The embedder. Default: `None`, which is the real model ([`crate::FastEmbedder`] with
    /// [`Options::embed`]) loaded the first time a text is embedded ([`LazyEmbedder`]): a
    /// search that needs no vector never loads it.
    pub embedder: Option<Arc<dyn Embedder>>,
    /// Options for the default embedder. Default: [`EmbedOptions::default`].
    pub embed: EmbedOptions,
    /// Options for every collection. Default: [`CollectionOptions::default`].
    pub collection: CollectionOptions,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("embedder", &self.embedder.as_ref().map(|e| e.model_id().to_string()))
            .field("embed", &self.embed)
            .field("collection", &self.collection)
            .finish()
    }
}

impl Options {
    /// Sets [`Options::embedder`].
    pub fn embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }
    /// Sets [`Options::collection`].
    pub fn collection(mut self, options: CollectionOptions) -> Self {
        self.collection = options;
        self
    }
}

/// A collection's identity, as listed by [`Index::collections`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CollectionInfo {
    /// Tenant name.
    pub tenant: String,
    /// Project name.
    pub project: String,
    /// `<tenant>_<project>_conversations`.
    pub name: String,
    /// Its directory.
    pub dir: PathBuf,
    /// The project's path on disk, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_path: Option<String>,
}

/// A data directory holding collections.
pub struct Index {
    root: PathBuf,
    options: Options,
    embedder: OnceLock<Arc<dyn Embedder>>,
    /// Embedders of other models that collections record (loaded when first used).
    others: Mutex<HashMap<String, Arc<dyn Embedder>>>,
    open: Mutex<HashMap<String, Weak<Collection>>>,
    /// Lines of the data directory's `glossary.tsv` left out (an unreadable file: line 0).
    glossary_skipped: Vec<GlossarySkip>,
}

/// The data directory's own glossary, added to the built-in one ([`Index::glossary_skipped`]).
pub const GLOSSARY_FILE: &str = "glossary.tsv";

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index").field("root", &self.root).field("options", &self.options).finish_non_exhaustive()
    }
}

/// Lower-cases and validates a tenant or project name: letters and digits of any script, `_`
/// and `-`, starting with a letter or digit, at most 64 bytes (`acme-api`, `项目甲`).
pub fn validate_name(what: &'static str, name: &str) -> Result<String> {
    let lower = name.to_lowercase();
    let err = |reason| Error::InvalidName { what, name: name.to_string(), reason };
    if lower.is_empty() {
        return Err(err("it is empty"));
    }
    if lower.len() > 64 {
        return Err(err("it is longer than 64 bytes"));
    }
    let mut chars = lower.chars();
    let first = chars.next().expect("non-empty");
    if !first.is_alphanumeric() {
        return Err(err("it must start with a letter or digit"));
    }
    if !chars.all(|c| c.is_alphanumeric() || c == '_' || c == '-') {
        return Err(err("it contains a character other than letters, digits, `_` and `-`"));
    }
    Ok(lower)
}

/// `<tenant>_<project>_conversations` for already-validated names.
pub fn collection_name(tenant: &str, project: &str) -> String {
    format!("{tenant}_{project}_conversations")
}

const IDENTITY_FILE: &str = "collection.json";

impl Index {
    /// Opens (creating if needed) a data directory.
    pub fn open(root: impl AsRef<Path>, mut options: Options) -> Result<Index> {
        let root = root.as_ref().to_path_buf();
        if root.exists() && !root.is_dir() {
            return Err(Error::InvalidArgument(format!(
                "the data directory {} is a file, not a directory; pass --data-dir (or set CONVDEX_DATA_DIR) \
                 naming a directory, or move the file away",
                root.display()
            )));
        }
        std::fs::create_dir_all(&root).map_err(|e| Error::io(&root, e))?;
        let embedder = OnceLock::new();
        if let Some(e) = &options.embedder {
            let _ = embedder.set(e.clone());
        }
        // A glossary of one's own: its concepts join the configured ones; a bad line is left
        // out and reported, never an error (searching matters more than the glossary).
        let mut glossary_skipped = Vec::new();
        let own = root.join(GLOSSARY_FILE);
        if own.exists() {
            match Glossary::read(&own) {
                Ok((g, skipped)) => {
                    options.collection.glossary = Arc::new(options.collection.glossary.extended(&g));
                    glossary_skipped = skipped;
                }
                Err(e) => glossary_skipped.push(GlossarySkip { line: 0, reason: format!("{e}") }),
            }
        }
        Ok(Index {
            root,
            options,
            embedder,
            others: Mutex::new(HashMap::new()),
            open: Mutex::new(HashMap::new()),
            glossary_skipped,
        })
    }

    /// Bytes on disk under the data directory (every collection, hook records, backups).
    pub fn bytes_on_disk(&self) -> u64 {
        crate::collection::read::dir_size(&self.root)
    }

    /// The data directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Lines of the data directory's [`GLOSSARY_FILE`] left out when the index was opened, with
    /// why (line 0: the file could not be read). Its other lines are in
    /// [`CollectionOptions::glossary`] of [`Index::options`].
    pub fn glossary_skipped(&self) -> &[GlossarySkip] {
        &self.glossary_skipped
    }

    /// The options this index was opened with (with the data directory's glossary added).
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The ranking chosen for this index's model ([`Ranking::for_model`] of
    /// [`Options::embedder`], else of the model [`EmbedOptions::model`] names): what the CLI,
    /// the MCP server and the prompt hook search with. [`Query::new`](crate::Query::new) starts
    /// from [`Ranking::default`], the default model's.
    pub fn default_ranking(&self) -> Ranking {
        match self.embedder.get() {
            Some(e) => Ranking::for_model(e.model_id()),
            None => self.options.embed.spec().map_or_else(|_| Ranking::default(), |s| Ranking::for_model(&s.name)),
        }
    }

    /// Whether this process holds the named collection open.
    pub(crate) fn is_open(&self, name: &str) -> bool {
        self.open.locked().get(name).and_then(Weak::upgrade).is_some()
    }

    /// The embedder ([`Options::embedder`], else the model [`EmbedOptions::model`] names,
    /// loaded when first used): new collections use it, and collections built with another
    /// model move to it ([`Index::migrate`]).
    pub fn embedder(&self) -> Result<Arc<dyn Embedder>> {
        if let Some(e) = self.embedder.get() {
            return Ok(e.clone());
        }
        let e: Arc<dyn Embedder> = Arc::new(LazyEmbedder::new(self.options.embed.clone())?);
        Ok(self.embedder.get_or_init(|| e).clone())
    }

    /// An embedder for the model a collection records (by model id), when this build knows
    /// it: the configured one, or another model of the manifest, loaded when first used.
    fn embedder_for_model(&self, model_id: &str) -> Option<Arc<dyn Embedder>> {
        if let Some(e) = self.embedder.get().filter(|e| e.model_id() == model_id) {
            return Some(e.clone());
        }
        let mut others = self.others.locked();
        if let Some(e) = others.get(model_id) {
            return Some(e.clone());
        }
        let spec = crate::models::Manifest::builtin().by_id(model_id)?;
        let options = EmbedOptions { model: Some(spec.name.clone()), ..self.options.embed.clone() };
        let e: Arc<dyn Embedder> = Arc::new(LazyEmbedder::new(options).ok()?);
        others.insert(model_id.to_string(), e.clone());
        Some(e)
    }

    /// Opens (creating if needed) the collection of `tenant` and `project`. Names are
    /// lower-cased and validated. The same collection is shared within a process.
    pub fn collection(&self, tenant: &str, project: &str) -> Result<Arc<Collection>> {
        self.collection_with(tenant, project, None)
    }

    /// Like [`Index::collection`], recording the project's path on creation.
    pub fn collection_with(&self, tenant: &str, project: &str, project_path: Option<&str>) -> Result<Arc<Collection>> {
        self.open_collection(tenant, project, project_path, false)
    }

    /// Records a collection's project path in its `collection.json` after it was set on an
    /// open collection ([`Index::collections`] lists from that file, and finding a project's
    /// collection without opening every one reads it).
    pub(crate) fn record_project_path(&self, coll: &Collection) -> Result<()> {
        let dir = self.root.join(coll.name());
        let Some(mut info) = read_identity(&dir) else { return Ok(()) };
        info.project_path = coll.meta()?.project_path;
        identity_if_changed(&dir, &info)
    }

    /// The collection a repair rebuilds, opened while its repair is under way.
    pub(crate) fn open_repairing(&self, tenant: &str, project: &str, path: Option<&str>) -> Result<Arc<Collection>> {
        self.open_collection(tenant, project, path, true)
    }

    fn open_collection(
        &self,
        tenant: &str,
        project: &str,
        project_path: Option<&str>,
        repairing: bool,
    ) -> Result<Arc<Collection>> {
        let tenant = validate_name("tenant", tenant)?;
        let project = validate_name("project", project)?;
        let name = collection_name(&tenant, &project);
        let mut open = self.open.locked();
        if let Some(c) = open.get(&name).and_then(Weak::upgrade) {
            return Ok(c);
        }
        let dir = self.root.join(&name);
        // A repair killed (or failed) before the fresh collection was complete: what is there
        // is not the whole collection; the next repair starts again from the damaged files.
        if !repairing && repair::repair_interrupted(&self.root, &name) {
            return Err(Error::Damaged {
                path: dir.join("data.redb"),
                reason: "a repair of it was interrupted before it finished".into(),
            });
        }
        // A `forget` that was interrupted before its compaction finished: finish it first, so
        // no forgotten text outlives the next open.
        if compact::compaction_pending(&dir) {
            compact::compact_dir(&dir, self.options.collection.lock_wait)?;
        }
        let meta = CollectionMeta {
            tenant: tenant.clone(),
            project: project.clone(),
            project_path: project_path.map(str::to_string),
            last_indexed_at_ms: None,
        };
        let resolve = |id: &str| self.embedder_for_model(id);
        let coll =
            Arc::new(Collection::open(&dir, &name, meta, self.embedder()?, self.options.collection.clone(), &resolve)?);
        // `collection.json` is derived (it lets `collections` list without opening): written when
        // missing, unreadable or wrong, atomically.
        let project_path = coll.meta()?.project_path;
        let info = CollectionInfo { tenant, project, name: name.clone(), dir: PathBuf::new(), project_path };
        identity_if_changed(&dir, &info)?;
        open.insert(name, Arc::downgrade(&coll));
        Ok(coll)
    }

    /// The collections in this data directory, sorted by name. A collection whose
    /// `collection.json` is missing or unreadable is identified from its store (and the file
    /// written again), else from its directory name.
    pub fn collections(&self) -> Result<Vec<CollectionInfo>> {
        let mut out = Vec::new();
        let rd = std::fs::read_dir(&self.root).map_err(|e| Error::io(&self.root, e))?;
        for entry in rd.flatten() {
            let dir = entry.path();
            // A collection is a store, or the id file that says one existed: a store deleted
            // is a damaged collection to report and repair, not one that silently vanished.
            if !dir.join("data.redb").exists() && !dir.join(crate::store::meta::STORE_ID_FILE).exists() {
                continue;
            }
            let listed = read_identity(&dir)
                .filter(|i| validate_name("tenant", &i.tenant).is_ok() && validate_name("project", &i.project).is_ok());
            let info = match listed {
                Some(i) => Some(i),
                None => {
                    let recovered = identity_from_store(&dir).or_else(|| identity_from_dir_name(&dir));
                    if let Some(i) = &recovered {
                        let _ = write_identity(&dir, i);
                    }
                    recovered
                }
            };
            // A copy under another name (the damaged files a repair moved aside, a backup) is
            // not the collection: that name opens the one whose directory it names.
            if let Some(mut info) = info.filter(|i| dir.file_name().is_some_and(|n| *n == *i.name)) {
                info.dir = dir;
                out.push(info);
            }
        }
        // A collection whose repair was interrupted is listed (its directory may be gone) so
        // that `doctor` finds it damaged and repairs it again.
        for info in repair::interrupted_repairs(&self.root) {
            if !out.iter().any(|i| i.name == info.name) {
                out.push(info);
            }
        }
        out.sort();
        Ok(out)
    }

    /// The collections of `project` (its exact name, or its name followed by a `-` suffix that
    /// [`crate::index_paths`] adds to tell apart projects of the same name; names compare
    /// normalised), or all, without opening them.
    pub fn collections_of(&self, project: Option<&str>) -> Result<Vec<CollectionInfo>> {
        let project = project.map(crate::text::normalize_name);
        let mut all = self.collections()?;
        if let Some(p) = project {
            all.retain(|i| i.project == p || i.project.starts_with(&format!("{p}-")));
        }
        Ok(all)
    }

    /// Opens every collection (or those of one project: its exact name, or its name followed
    /// by a `-` suffix that [`crate::index_paths`] adds to tell apart projects of the same name).
    /// A collection that cannot be opened (busy in another process, damaged) does not stop the
    /// others: it is returned in [`Opened::skipped`] with the reason.
    pub fn open_collections(&self, project: Option<&str>) -> Result<Opened> {
        let mut out = Opened::default();
        for info in self.collections_of(project)? {
            match self.collection(&info.tenant, &info.project) {
                Ok(c) => out.collections.push((info, c)),
                Err(error) => out.skipped.push(Skipped { info, error }),
            }
        }
        Ok(out)
    }
}

/// Collections opened by [`Index::open_collections`].
#[derive(Debug, Default)]
pub struct Opened {
    /// The collections that opened, sorted by name.
    pub collections: Vec<(CollectionInfo, Arc<Collection>)>,
    /// The ones that did not, with why.
    pub skipped: Vec<Skipped>,
}

/// A collection that could not be opened.
#[derive(Debug)]
pub struct Skipped {
    /// Which one.
    pub info: CollectionInfo,
    /// Why (e.g. [`Error::InUse`], [`Error::Damaged`]).
    pub error: Error,
}

impl std::fmt::Display for Skipped {
    /// `skipped collection <name>: <error>`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "skipped collection {}: {}", self.info.name, self.error.chain())
    }
}

/// The `collection.json` of `dir`, when it is there and readable.
fn read_identity(dir: &Path) -> Option<CollectionInfo> {
    std::fs::read_to_string(dir.join(IDENTITY_FILE)).ok().and_then(|t| serde_json::from_str(&t).ok())
}

/// Writes `collection.json` when it is missing or says otherwise than `info`.
fn identity_if_changed(dir: &Path, info: &CollectionInfo) -> Result<()> {
    if read_identity(dir).as_ref() == Some(info) { Ok(()) } else { write_identity(dir, info) }
}

fn write_identity(dir: &Path, info: &CollectionInfo) -> Result<()> {
    let identity = dir.join(IDENTITY_FILE);
    let tmp = dir.join(format!("{IDENTITY_FILE}.tmp"));
    let bare = CollectionInfo { dir: PathBuf::new(), ..info.clone() };
    let text = serde_json::to_string(&bare).map_err(|e| Error::io(&identity, std::io::Error::other(e)))?;
    std::fs::write(&tmp, text).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, &identity).map_err(|e| Error::io(&identity, e))
}

/// Tenant and project from the store's metadata (read-only; `None` when the store is busy in
/// another process or unreadable).
fn identity_from_store(dir: &Path) -> Option<CollectionInfo> {
    let path = dir.join("data.redb");
    // Only under the collection's lock, taken without waiting: a store that is open elsewhere is
    // being written, and a glance at it would make its writer's next open fail.
    let lock = std::fs::OpenOptions::new().read(true).write(true).open(dir.join("LOCK")).ok();
    if lock.as_ref().is_some_and(|l| l.try_lock().is_err()) {
        return None;
    }
    let read = std::panic::catch_unwind(|| -> Option<crate::collection::CollectionMeta> {
        let db = redb::ReadOnlyDatabase::open(&path).ok()?;
        crate::store::meta::read_meta(&db).ok()
    });
    let meta = read.ok().flatten()?;
    let tenant = validate_name("tenant", &meta.tenant).ok()?;
    let project = validate_name("project", &meta.project).ok()?;
    let name = collection_name(&tenant, &project);
    let project_path = meta.project_path;
    (dir.file_name()? == name.as_str()).then(|| CollectionInfo {
        tenant,
        project,
        name,
        dir: dir.to_path_buf(),
        project_path,
    })
}

/// `<tenant>_<project>_conversations` split at the first `_` (a tenant with `_` in its name is
/// misread; only used when both `collection.json` and the store are unreadable).
fn identity_from_dir_name(dir: &Path) -> Option<CollectionInfo> {
    let name = dir.file_name()?.to_str()?.to_string();
    let stem = name.strip_suffix("_conversations")?;
    let (tenant, project) = stem.split_once('_')?;
    let tenant = validate_name("tenant", tenant).ok()?;
    let project = validate_name("project", project).ok()?;
    Some(CollectionInfo { tenant, project, name, dir: dir.to_path_buf(), project_path: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_validated() {
        assert_eq!(validate_name("project", "ConvDex").unwrap(), "convdex");
        assert_eq!(validate_name("project", "my_proj-2").unwrap(), "my_proj-2");
        assert_eq!(validate_name("project", "项目甲").unwrap(), "项目甲");
        assert_eq!(validate_name("project", "Ébène").unwrap(), "ébène");
        for bad in
            ["", "..", "a/b", "a\\b", "a b", "_x", "-x", "a.b", "a:b", "\u{202e}x", &"x".repeat(65), &"项".repeat(22)]
        {
            let err = validate_name("project", bad).unwrap_err();
            assert!(matches!(err, Error::InvalidName { .. }), "{bad}: {err}");
        }
    }

    #[test]
    fn the_default_ranking_is_the_models() {
        let dir = tempfile::tempdir().unwrap();
        for (model, expected) in
            [(None, Ranking::default()), (Some("potion-base-8m"), Ranking::for_model("potion-base-8m"))]
        {
            let mut options = Options::default();
            if let Some(m) = model {
                options.embed = options.embed.model(m);
            }
            let index = Index::open(dir.path().join(model.unwrap_or("default")), options).unwrap();
            assert_eq!(index.default_ranking(), expected, "{model:?}");
        }
        // A custom embedder: its model id decides (a test embedder gets the default).
        let options = Options::default().embedder(Arc::new(crate::embed::HashEmbedder::new(16)));
        assert_eq!(Index::open(dir.path().join("custom"), options).unwrap().default_ranking(), Ranking::default());
        assert_ne!(Ranking::for_model("potion-base-8m"), Ranking::default());
    }
}
