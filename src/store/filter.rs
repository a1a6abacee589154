//! Candidate documents for a filter: each [`Clause`] read from its secondary index into a
//! [`DocSet`], the sets intersected. The store knows indexes, not filters.

use redb::{MultimapTableDefinition, ReadTransaction};

use crate::error::Result;
use crate::ids::DocSet;
use crate::search::query::{Clause, IndexName};
use crate::store::tables::*;

fn str_table(index: IndexName) -> Option<MultimapTableDefinition<'static, &'static str, u64>> {
    match index {
        IndexName::Tag => Some(IDX_TAG),
        IndexName::Domain => Some(IDX_DOMAIN),
        IndexName::Session => Some(IDX_SESSION),
        IndexName::File => Some(IDX_FILE),
        IndexName::Kind => None,
    }
}

/// The documents passing every clause; `None` when there is no clause (every document passes).
pub(crate) fn candidates(tx: &ReadTransaction, clauses: &[Clause]) -> Result<Option<DocSet>> {
    let mut acc: Option<DocSet> = None;
    for clause in clauses {
        let mut s = DocSet::new();
        match clause {
            Clause::Any(IndexName::Kind, keys) => {
                let t = tx.open_multimap_table(IDX_KIND)?;
                for code in keys.iter().filter_map(|k| k.parse::<u8>().ok()) {
                    for id in t.get(code)? {
                        s.insert(id?.value());
                    }
                }
            }
            Clause::Any(index, keys) => {
                if let Some(def) = str_table(*index) {
                    let t = tx.open_multimap_table(def)?;
                    for k in keys {
                        for id in t.get(k.as_str())? {
                            s.insert(id?.value());
                        }
                    }
                }
            }
            Clause::Prefix(index, prefixes) => {
                if let Some(def) = str_table(*index) {
                    let t = tx.open_multimap_table(def)?;
                    for p in prefixes {
                        for entry in t.range(p.as_str()..)? {
                            let (k, ids) = entry?;
                            if !k.value().starts_with(p.as_str()) {
                                break;
                            }
                            for id in ids {
                                s.insert(id?.value());
                            }
                        }
                    }
                }
            }
            Clause::TimeRange(lo, hi) => {
                let t = tx.open_multimap_table(IDX_TIME)?;
                for entry in t.range(*lo..=*hi)? {
                    for id in entry?.1 {
                        s.insert(id?.value());
                    }
                }
            }
        }
        match &mut acc {
            Some(a) => a.intersect(&s),
            None => acc = Some(s),
        }
    }
    Ok(acc)
}
