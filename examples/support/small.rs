//! Small histories for the ranking example (`--small`): each question of the evaluation sets
//! whose answers lie in one session asked again of a collection that holds that session only,
//! as on a machine with one conversation. The session's documents and their vectors are copied
//! from the large indexes (nothing is embedded again), one collection per session, under the
//! tenant `small` of their own index.

use std::collections::HashMap;
use std::sync::Arc;

use convdex::{Collection, Document, Index};

/// The documents with their vectors of every collection of `index`, by session id.
pub fn by_session(index: &Index) -> anyhow::Result<Docs> {
    let mut out: Docs = HashMap::new();
    for info in index.collections()? {
        let coll = index.collection(&info.tenant, &info.project)?;
        for (doc, vectors) in coll.documents_with_vectors()? {
            if !vectors.is_empty() {
                out.entry(doc.session_id.clone()).or_default().push((doc, vectors));
            }
        }
    }
    Ok(out)
}

/// The one-session collection of `session` in `small`, made from `docs` when it holds nothing
/// yet (so a data directory kept between runs is reused); `None` when the session has no
/// document with vectors.
pub fn collection(small: &Index, session: &str, docs: &Docs) -> anyhow::Result<Option<Arc<Collection>>> {
    let Some(found) = docs.get(session) else { return Ok(None) };
    let name: String = session.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '-' }).collect();
    let coll = small.collection("small", &name)?;
    if coll.stats()?.sessions == 0 {
        let (d, v): (Vec<Document>, Vec<Vec<Vec<f32>>>) = found.iter().cloned().unzip();
        coll.add_embedded_chunks(&d, &v)?;
    }
    Ok(Some(coll))
}

/// Documents with their vectors, by session id.
pub type Docs = HashMap<String, Vec<(Document, Vec<Vec<f32>>)>>;

/// The small histories' index and the documents their collections are made from.
pub struct Small {
    /// Where the one-session collections are made.
    pub index: Index,
    /// LoCoMo's documents, by session.
    pub locomo: Docs,
    /// The Claude Code corpus's documents, by session.
    pub claude: Docs,
}
